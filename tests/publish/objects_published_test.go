package publish

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/kubesource"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// TestObjectsSayWhatTheyPublished (issue 41): a route whose name is committed to etcd gets a
// Normal Published Event naming it and the revision that committed it (its key's mod
// revision), once per change: a replica that takes over and a writer that restarts find it
// published and raise nothing, the next change raises the next Event. A DNSEndpoint, with the
// CRD given external-dns's status conditions (deploy/crds/dnsendpoint-status.json), gets
// Accepted and Ready=Programmed with observedGeneration, and Ready flips to Filtered when its
// name leaves the domain filter (a Withdrawn Event) and Accepted to Invalid when its entry is
// not understood.
func TestObjectsSayWhatTheyPublished(t *testing.T) {
	start := time.Now()
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	kube.InstallDNSEndpointCRD(t)
	giveDNSEndpointConditions(t, kube.Config)
	k8s := gatewayfixture.New(t, kube.Config)
	for _, ns := range []string{"infra", "shop", "dns"} {
		k8s.Namespace(ns)
	}
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "*.eu1.openmcp.cluster", "203.0.113.10")
	k8s.HTTPRoute("shop", "web", "infra", "public", "web.eu1.openmcp.cluster")
	k8s.DNSEndpoint("dns", "records", gatewayfixture.Endpoint{DNSName: "app.eu1.openmcp.cluster", RecordType: "A", TTL: 60, Targets: []string{"203.0.113.60"}})
	cli := etcd.Client(t)
	// modRev waits for the writer's key of name -> target and returns its mod revision.
	modRev := func(name, target string) int64 {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if kv, ok := e2e.KeysUnder(t, cli, "/skydns/")[e2e.OwnKey(name, "eu1", target)]; ok {
				return kv.ModRev
			}
			if time.Now().After(deadline) {
				t.Fatalf("no key of %s -> %s", name, target)
			}
		}
	}
	writer := func(name string) *corednsproc.Process {
		p := e2e.RunWriter(t, name, etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster", "sources gateway-httproute crd")
		p.WaitReady(t, 60*time.Second)
		return p
	}
	// published waits for the route's Published Event for target, then checks that it is the
	// n-th: each one before it, none between.
	published := func(target string, n int) {
		t.Helper()
		want := fmt.Sprintf("Published in etcd at revision %d: web.eu1.openmcp.cluster", modRev("web.eu1.openmcp.cluster", target))
		waitNormalEvent(t, k8s, "shop", "HTTPRoute", "web", kubesource.ReasonPublished, want, n, 15*time.Second)
	}
	a := writer("a")

	published("203.0.113.10", 1)
	t.Logf("route published -> its Event (after %s)", time.Since(start))

	des := k8s.Dyn.Resource(source.DNSEndpointGVR).Namespace("dns")
	d := waitDNSEndpoint(t, des, "records", 10*time.Second, func(d *source.DNSEndpoint) bool {
		return d.Status.ObservedGeneration == d.Generation && readyReason(d) == kubesource.ReasonProgrammed
	})
	checkCondition(t, d, kubesource.ConditionAccepted, metav1.ConditionTrue, kubesource.ReasonAccepted, "1 endpoint(s) accepted")
	checkCondition(t, d, kubesource.ConditionReady, metav1.ConditionTrue, kubesource.ReasonProgrammed,
		fmt.Sprintf("1 name(s) published in etcd at revision %d", modRev("app.eu1.openmcp.cluster", "203.0.113.60")))
	if d.Status.Endpoints == nil || *d.Status.Endpoints != 1 {
		t.Errorf("status.endpoints %v, want 1", d.Status.Endpoints)
	}
	statusVersion := d.ResourceVersion

	// A replica takes over, then the first writer, restarted, takes over again: each finds the
	// route published and says nothing; the change after each is the only Event it raises. (The
	// Events of one writer are sent in order: one raised by the take-over would come first.)
	const leader, synced = `coredns_gatewaydns_writer_leader{owner="eu1"}`, `coredns_gatewaydns_writer_last_sync_timestamp_seconds{owner="eu1"}`
	for i, next := range []string{"b", "a-restarted"} {
		standby := writer(next)
		a.Stop(t)
		standby.WaitMetric(t, 15*time.Second, leader, func(v float64) bool { return v == 1 })
		standby.WaitMetric(t, 15*time.Second, synced, func(v float64) bool { return v > 0 }) // its first full resync, sources synced
		address := fmt.Sprintf("203.0.113.%d", 11+i)
		k8s.SetGatewayAddresses("infra", "public", address)
		published(address, i+2)
		a = standby
	}
	if d := getDNSEndpoint(t, des, "records"); d.ResourceVersion != statusVersion {
		t.Errorf("the take-overs rewrote the DNSEndpoint's status: %+v", d.Status)
	}
	t.Logf("two take-overs, two changes -> two Events more (after %s)", time.Since(start))

	// Out of the domain filter: withdrawn, Ready Filtered; an entry not understood: Invalid.
	appRev := modRev("app.eu1.openmcp.cluster", "203.0.113.60")
	setDNSEndpoint(t, des, "records", "app.eu2.openmcp.cluster", "203.0.113.60")
	d = waitDNSEndpoint(t, des, "records", 10*time.Second, func(d *source.DNSEndpoint) bool { return readyReason(d) == kubesource.ReasonFiltered })
	checkCondition(t, d, kubesource.ConditionAccepted, metav1.ConditionTrue, kubesource.ReasonAccepted, "0 endpoint(s) accepted")
	checkCondition(t, d, kubesource.ConditionReady, metav1.ConditionFalse, kubesource.ReasonFiltered,
		"No endpoint published: every endpoint in spec is outside the domain filter")
	gone := waitNormalEvent(t, k8s, "dns", source.KindDNSEndpoint, "records", kubesource.ReasonWithdrawn, "", 1, 10*time.Second)
	var rev int64
	if _, err := fmt.Sscanf(gone.Message, "Withdrawn from etcd at revision %d: app.eu1.openmcp.cluster", &rev); err != nil || rev <= appRev {
		t.Errorf("the DNSEndpoint's Withdrawn Event says %q, want a revision after %d and its name", gone.Message, appRev)
	}
	setDNSEndpoint(t, des, "records", "app.eu1.openmcp.cluster", "not-an-address")
	d = waitDNSEndpoint(t, des, "records", 10*time.Second, func(d *source.DNSEndpoint) bool { return readyReason(d) == kubesource.ReasonInvalid })
	if c := meta.FindStatusCondition(d.Status.Conditions, kubesource.ConditionAccepted); c == nil || c.Status != metav1.ConditionFalse ||
		c.Reason != kubesource.ReasonInvalid || !strings.Contains(c.Message, "spec.endpoints[0]") || c.ObservedGeneration != d.Generation {
		t.Errorf("Accepted of an entry not understood: %+v", c)
	}
	if evs := normalEvents(t, k8s, "shop", "HTTPRoute", "web", kubesource.ReasonPublished); count(evs) != 3 {
		t.Errorf("the route has %d Published Events in the end, want 3: %v", count(evs), messages(evs))
	}
	t.Logf("total %s", time.Since(start))
}

// giveDNSEndpointConditions patches the DNSEndpoint CRD with deploy/crds/dnsendpoint-status.json,
// as the README tells (kubectl patch crd --type=json), and waits until the API server serves
// the new schema (its printer columns show in a Table).
func giveDNSEndpointConditions(t *testing.T, rc *rest.Config) {
	t.Helper()
	patch, err := os.ReadFile(filepath.Join("..", "..", "deploy", "crds", "dnsendpoint-status.json"))
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Patch(context.Background(), source.DNSEndpointGVR.GroupResource().String(), types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the DNSEndpoint CRD: %v", err)
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	path := "/apis/" + source.DNSEndpointGVR.GroupVersion().String() + "/" + source.DNSEndpointGVR.Resource
	var table metav1.Table
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		body, err := kube.Discovery().RESTClient().Get().AbsPath(path).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
		if err == nil {
			err = json.Unmarshal(body, &table)
		}
		if err == nil && slices.ContainsFunc(table.ColumnDefinitions, func(c metav1.TableColumnDefinition) bool { return c.Name == "Ready" }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the DNSEndpoint CRD's new columns are not served within 10s: %v %+v", err, table.ColumnDefinitions)
		}
	}
}

// normalEvents are the Normal Events with reason on the object, oldest first.
func normalEvents(t *testing.T, k8s *gatewayfixture.Cluster, namespace, kind, name, reason string) []corev1.Event {
	t.Helper()
	list, err := k8s.Kube.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var evs []corev1.Event
	for _, e := range list.Items {
		if e.Type == corev1.EventTypeNormal && e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Reason == reason {
			evs = append(evs, e)
		}
	}
	slices.SortFunc(evs, func(a, b corev1.Event) int { return a.FirstTimestamp.Compare(b.FirstTimestamp.Time) })
	return evs
}

// count is how many times Events were raised: an Event the recorder repeated counts its repeats.
func count(evs []corev1.Event) int {
	n := 0
	for _, e := range evs {
		n += int(max(e.Count, 1))
	}
	return n
}

// waitNormalEvent waits for a Normal Event with reason and message on the object (any message
// when message is ""), and fails unless it was raised once and, with those before it, n times.
func waitNormalEvent(t *testing.T, k8s *gatewayfixture.Cluster, namespace, kind, name, reason, message string, n int, within time.Duration) corev1.Event {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		evs := normalEvents(t, k8s, namespace, kind, name, reason)
		if i := slices.IndexFunc(evs, func(e corev1.Event) bool { return message == "" || e.Message == message }); i >= 0 {
			if count(evs) != n || evs[i].Count > 1 {
				t.Fatalf("%s %s/%s: %s Events %v, want %q as the %d-th, raised once", kind, namespace, name, reason, messages(evs), message, n)
			}
			return evs[i]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s/%s: no %s Event %q within %s; there are %v", kind, namespace, name, reason, message, within, messages(evs))
		}
	}
}

func messages(evs []corev1.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%q x%d", e.Message, e.Count))
	}
	return out
}

func getDNSEndpoint(t *testing.T, des dynamic.ResourceInterface, name string) *source.DNSEndpoint {
	t.Helper()
	u, err := des.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := source.DNSEndpointFromUnstructured(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// waitDNSEndpoint waits until the DNSEndpoint satisfies cond.
func waitDNSEndpoint(t *testing.T, des dynamic.ResourceInterface, name string, within time.Duration, cond func(*source.DNSEndpoint) bool) *source.DNSEndpoint {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		d := getDNSEndpoint(t, des, name)
		if cond(d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("DNSEndpoint %s at generation %d: status %+v", name, d.Generation, d.Status)
		}
	}
}

// setDNSEndpoint makes the DNSEndpoint's spec one A entry.
func setDNSEndpoint(t *testing.T, des dynamic.ResourceInterface, name, dnsName, target string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"endpoints":[{"dnsName":%q,"recordType":"A","recordTTL":60,"targets":[%q]}]}}`, dnsName, target)
	if _, err := des.Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func readyReason(d *source.DNSEndpoint) string {
	if c := meta.FindStatusCondition(d.Status.Conditions, kubesource.ConditionReady); c != nil && c.ObservedGeneration == d.Generation {
		return c.Reason
	}
	return ""
}

func checkCondition(t *testing.T, d *source.DNSEndpoint, typ string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	c := meta.FindStatusCondition(d.Status.Conditions, typ)
	if c == nil || c.Status != status || c.Reason != reason || c.Message != message || c.ObservedGeneration != d.Generation {
		t.Errorf("DNSEndpoint %s at generation %d: %s is %+v, want %s %s %q", d.Name, d.Generation, typ, c, status, reason, message)
	}
}
