package deploy

import (
	"context"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// checkWritesInTheCluster makes the workload writer wl, which runs with exactly the shipped
// roles, do each write they grant, and checks that each landed: a DNSEndpoint's status patch
// (dnsendpoints/status patch), a Warning Event on it (events create), and the same Event again
// once the problem comes back (events patch: the recorder raises the count of the Event it
// made). cfg is an admin's: it creates the objects and reads the results.
func checkWritesInTheCluster(t *testing.T, cfg *rest.Config, wl *corednsproc.Process) {
	t.Helper()
	k8s := gatewayfixture.New(t, cfg)
	k8s.Namespace("apps")
	res := dynamic.NewForConfigOrDie(cfg).Resource(source.DNSEndpointGVR).Namespace("apps")
	entry := func(name, typ string, targets ...any) any {
		return map[string]any{"dnsName": name, "recordType": typ, "recordTTL": int64(60), "targets": targets}
	}
	good := entry("records.eu1.openmcp.cluster", "A", "203.0.113.60")
	bad := entry("_sip._udp.records.eu1.openmcp.cluster", "SRV", "not srv data")
	setEntries := func(entries ...any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		u, err := res.Get(ctx, "records", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedSlice(u.Object, entries, "spec", "endpoints"); err != nil {
			t.Fatal(err)
		}
		if _, err := res.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := res.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
		"metadata": map[string]any{"name": "records"},
		"spec":     map[string]any{"endpoints": []any{good, bad}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Published, and answered through the workload's forward to central.
	e2e.WaitFor(t, 20*time.Second, wl.DNS, "records.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.60"))
	e2e.WaitObservedGeneration(t, res, "records", 10*time.Second)
	reason := string(source.CauseInvalidTarget)
	if evs := k8s.WaitWarningEvents("apps", source.KindDNSEndpoint, "records", reason, 10*time.Second); len(evs) != 1 || evs[0].Count != 1 {
		t.Fatalf("after the first rejection: %d %s Events, want one of count 1: %v", len(evs), reason, evs)
	}

	// Mended, then broken the same way: the same Event, its count patched to 2.
	setEntries(good)
	e2e.WaitObservedGeneration(t, res, "records", 10*time.Second)
	setEntries(good, bad)
	e2e.WaitObservedGeneration(t, res, "records", 10*time.Second)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		evs := k8s.WarningEvents("apps", source.KindDNSEndpoint, "records", reason)
		if len(evs) == 1 && evs[0].Count == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the second rejection: %s Events %v, want one of count 2 (patched)", reason, evs)
		}
	}
}
