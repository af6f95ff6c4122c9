package kubesource

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// dnsEndpointObject is a DNSEndpoint as a user writes it, entries as (dnsName, type, ttl,
// targets...) lists.
func dnsEndpointObject(namespace, name string, entries ...[]any) *unstructured.Unstructured {
	var eps []any
	for _, e := range entries {
		targets := []any{}
		for _, t := range e[3:] {
			targets = append(targets, t)
		}
		eps = append(eps, map[string]any{"dnsName": e[0], "recordType": e[1], "recordTTL": int64(e[2].(int)), "targets": targets})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"spec":     map[string]any{"endpoints": eps},
	}}
}

func records(w *Watcher, name string) string {
	ep, ok := w.Desired().Endpoint(name)
	if !ok {
		return name + " absent"
	}
	var rs []string
	for _, r := range ep.Records {
		rs = append(rs, r.String())
	}
	return fmt.Sprintf("%s -> %s ttl=%d %s", name, strings.Join(ep.Targets, ","), ep.TTL, strings.Join(rs, "; "))
}

// observedGeneration is the condition that DNSEndpoint name is at generation gen and its
// status says gen was observed.
func (c *cluster) observedGeneration(des dynamic.ResourceInterface, name string, gen int64) func() (bool, string) {
	return func() (bool, string) {
		u, err := des.Get(c.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		return u.GetGeneration() == gen && og == gen, fmt.Sprintf("generation %d, observedGeneration %d", u.GetGeneration(), og)
	}
}

// TestIntegrationDNSEndpoint: on a kube-apiserver without the DNSEndpoint CRD, a Watcher asked
// for DNSEndpoints syncs without it, picks the CRD up when it is installed, publishes a
// DNSEndpoint's A, TXT, SRV and MX records, writes status.observedGeneration, reports invalid
// entries as Warning Events, and follows an update and a delete.
func TestIntegrationDNSEndpoint(t *testing.T) {
	start := time.Now()
	c := startCluster(t)
	t.Logf("kube-apiserver up in %v", time.Since(start).Round(time.Millisecond))
	c.namespace("apps", nil)
	dyn, err := dynamic.NewForConfig(c.env.Config)
	c.must(err)
	des := dyn.Resource(source.DNSEndpointGVR).Namespace("apps")

	obs := newRecordingObserver()
	w := c.watch(source.Config{}, obs, source.KindDNSEndpoint)
	waitSynced(t, w)
	if h := obs.servedHistory(source.KindDNSEndpoint); !slices.Equal(h, []bool{false}) {
		t.Fatalf("DNSEndpoint served history %v, want [false]", h)
	}

	step := time.Now()
	c.env.InstallDNSEndpointCRD(t)
	_, err = des.Create(c.ctx, dnsEndpointObject("apps", "e",
		[]any{"a.example.com", "A", 60, "192.0.2.1", "192.0.2.2"},
		[]any{"example.com", "TXT", 0, "v=spf1 mx -all"},
		[]any{"example.com", "MX", 0, "10 mail.example.com"},
		[]any{"_sip._tcp.example.com", "SRV", 0, "10 60 5060 sip.example.com"},
		[]any{"ns.example.com", "NS", 0, "ns1.example.net"},
		[]any{"two.example.com", "CNAME", 0, "one.example.net", "two.example.net"},
	), metav1.CreateOptions{})
	c.must(err)
	eventually(t, waitFor, "the DNSEndpoint's A records", endpointIs(w, "a.example.com", "192.0.2.1", "192.0.2.2"))
	t.Logf("DNSEndpoint CRD picked up and published %v after install", time.Since(step).Round(time.Millisecond))
	for name, want := range map[string]string{
		"a.example.com":         "a.example.com -> 192.0.2.1,192.0.2.2 ttl=60 ",
		"example.com":           `example.com ->  ttl=0 MX 10 mail.example.com; TXT "v=spf1 mx -all"`,
		"_sip._tcp.example.com": "_sip._tcp.example.com ->  ttl=0 SRV 10 60 5060 sip.example.com",
		"ns.example.com":        "ns.example.com absent",
		"two.example.com":       "two.example.com absent",
	} {
		if got := records(w, name); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
	if h := obs.servedHistory(source.KindDNSEndpoint); !slices.Equal(h, []bool{false, true}) {
		t.Errorf("DNSEndpoint served history %v, want [false true]", h)
	}

	eventually(t, waitFor, "status.observedGeneration 1", c.observedGeneration(des, "e", 1))
	for _, reason := range []source.Cause{source.CauseUnsupportedRecordType, source.CauseInvalidTarget} {
		eventually(t, waitFor, "a "+string(reason)+" Event", func() (bool, string) {
			evs := warningEvents(t, c.kube, "apps", source.KindDNSEndpoint, "e", string(reason))
			if len(evs) == 0 {
				return false, "none"
			}
			if evs[0].InvolvedObject.APIVersion != "externaldns.k8s.io/v1alpha1" || !strings.Contains(evs[0].Message, "spec.endpoints[") {
				return false, fmt.Sprintf("%+v", evs[0])
			}
			return true, ""
		})
		if n := obs.rejections(source.KindDNSEndpoint, reason); n != 1 {
			t.Errorf("%s counted %d times, want 1", reason, n)
		}
	}

	// An update: another address, an entry fixed. A new generation, observed in turn.
	u, err := des.Get(c.ctx, "e", metav1.GetOptions{})
	c.must(err)
	upd := dnsEndpointObject("apps", "e",
		[]any{"a.example.com", "A", 60, "192.0.2.3"},
		[]any{"two.example.com", "CNAME", 0, "one.example.net"},
	)
	upd.SetResourceVersion(u.GetResourceVersion())
	_, err = des.Update(c.ctx, upd, metav1.UpdateOptions{})
	c.must(err)
	eventually(t, waitFor, "the updated A record", endpointIs(w, "a.example.com", "192.0.2.3"))
	eventually(t, waitFor, "the fixed CNAME", endpointIs(w, "two.example.com", "one.example.net"))
	eventually(t, waitFor, "the dropped MX and TXT", func() (bool, string) {
		return records(w, "example.com") == "example.com absent", records(w, "example.com")
	})
	eventually(t, waitFor, "status.observedGeneration 2", c.observedGeneration(des, "e", 2))

	c.must(des.Delete(c.ctx, "e", metav1.DeleteOptions{}))
	eventually(t, waitFor, "the deleted DNSEndpoint's names", endpointIs(w, "a.example.com"))
	eventually(t, waitFor, "the deleted DNSEndpoint's CNAME", endpointIs(w, "two.example.com"))
}

// DNSEndpoints are read only when asked for: the default kinds (none named) leave them out.
func TestDNSEndpointIsOptIn(t *testing.T) {
	w := &Watcher{dyn: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())}
	for _, tc := range []struct {
		kinds []string
		want  bool
	}{
		{nil, false},
		{[]string{source.KindHTTPRoute}, false},
		{[]string{source.KindDNSEndpoint}, true},
		{[]string{source.KindIngress, source.KindDNSEndpoint}, true},
	} {
		w.opts = Options{Kinds: tc.kinds}
		got := slices.ContainsFunc(w.discoveredKinds(), func(gk gatewayKind) bool { return gk.kind == source.KindDNSEndpoint })
		if got != tc.want || w.opts.watches(source.KindDNSEndpoint) != tc.want {
			t.Errorf("kinds %v: DNSEndpoint read %v, want %v", tc.kinds, got, tc.want)
		}
	}
	w.opts = Options{}
	if !w.opts.watches(source.KindHTTPRoute) || !w.opts.watches(source.KindIngress) {
		t.Error("the default kinds no longer read routes and Ingresses")
	}
}
