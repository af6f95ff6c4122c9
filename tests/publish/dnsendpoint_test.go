package publish

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/gatewaydns/gatewaydns/internal/dnscheck"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// TestWriterPublishesDNSEndpoints: a writer binary with `sources crd` publishes a DNSEndpoint's
// A, TXT, SRV and MX records into etcd in the SkyDNS format, and the central server binary
// answers them over UDP and TCP: an MX and a TXT beside a name's A record leave its A answer
// without a CNAME, the SRV answer carries its target's address as glue. An invalid entry is a
// Warning Event on the DNSEndpoint and counted once in source_rejections_total, an update is
// answered, and status.observedGeneration follows the generation.
func TestWriterPublishesDNSEndpoints(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	kube.InstallDNSEndpointCRD(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("dns")
	dyn, err := dynamic.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}

	central := e2e.RunCentral(t, etcd.ClientURL)
	writer := e2e.RunWriter(t, "eu1", etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster", "sources crd")

	entry := func(name, typ string, ttl int64, targets ...any) any {
		return map[string]any{"dnsName": name, "recordType": typ, "recordTTL": ttl, "targets": targets}
	}
	start := time.Now()
	_, err = dyn.Resource(source.DNSEndpointGVR).Namespace("dns").Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
		"metadata": map[string]any{"name": "records"},
		"spec": map[string]any{"endpoints": []any{
			entry("app.eu1.openmcp.cluster", "A", 60, "203.0.113.60"),
			entry("shop.eu1.openmcp.cluster", "A", 60, "203.0.113.61"),
			entry("shop.eu1.openmcp.cluster", "MX", 60, "10 mx.eu1.openmcp.cluster"),
			entry("shop.eu1.openmcp.cluster", "TXT", 60, "v=spf1 mx -all"),
			entry("mx.eu1.openmcp.cluster", "A", 60, "203.0.113.25"),
			entry("_https._tcp.shop.eu1.openmcp.cluster", "SRV", 60, "10 5 443 app.eu1.openmcp.cluster"),
			entry("bad.eu1.openmcp.cluster", "SRV", 60, "not srv data"),
		}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e2e.WaitFor(t, 10*time.Second, central.DNS, "_https._tcp.shop.eu1.openmcp.cluster.", dns.TypeSRV, e2e.HasAnswer)
	t.Logf("DNSEndpoint created -> its SRV record answered by the central server: %s", time.Since(start))

	lines := func(rrs []dns.RR) []string {
		var out []string
		for _, rr := range rrs {
			out = append(out, strings.Join(strings.Fields(rr.String()), " "))
		}
		slices.Sort(out)
		return out
	}
	for _, netw := range []string{"udp", "tcp"} {
		for _, tc := range []struct {
			name         string
			qtype        uint16
			answer, glue []string
		}{
			{"app.eu1.openmcp.cluster.", dns.TypeA, []string{"app.eu1.openmcp.cluster. 60 IN A 203.0.113.60"}, nil},
			{"shop.eu1.openmcp.cluster.", dns.TypeA, []string{"shop.eu1.openmcp.cluster. 60 IN A 203.0.113.61"}, nil},
			{"shop.eu1.openmcp.cluster.", dns.TypeTXT, []string{`shop.eu1.openmcp.cluster. 60 IN TXT "v=spf1 mx -all"`}, nil},
			{"shop.eu1.openmcp.cluster.", dns.TypeMX, []string{"shop.eu1.openmcp.cluster. 60 IN MX 10 mx.eu1.openmcp.cluster."},
				[]string{"mx.eu1.openmcp.cluster. 60 IN A 203.0.113.25"}},
			// One SRV record: its weight is normalised to 100, as every SkyDNS reader does.
			{"_https._tcp.shop.eu1.openmcp.cluster.", dns.TypeSRV, []string{"_https._tcp.shop.eu1.openmcp.cluster. 60 IN SRV 10 100 443 app.eu1.openmcp.cluster."},
				[]string{"app.eu1.openmcp.cluster. 60 IN A 203.0.113.60"}},
		} {
			r := e2e.Ask(t, netw, central.DNS, tc.name, tc.qtype)
			if got := lines(r.Answer); r.Rcode != dns.RcodeSuccess || !slices.Equal(got, tc.answer) {
				t.Errorf("%s %s over %s: answer %q, want %q\n%s", tc.name, dns.TypeToString[tc.qtype], netw, got, tc.answer, e2e.Render(r))
			}
			if got := lines(r.Extra); !slices.Equal(got, tc.glue) {
				t.Errorf("%s %s over %s: additional %q, want %q", tc.name, dns.TypeToString[tc.qtype], netw, got, tc.glue)
			}
			if dnscheck.CNAMEBesideOtherData(r.Answer) {
				t.Errorf("%s %s over %s: a CNAME beside other data: %v", tc.name, dns.TypeToString[tc.qtype], netw, r.Answer)
			}
		}
	}

	// In etcd: shop's three records at its key, each owned by eu1, the MX as the stock plugin reads it.
	keys := e2e.KeysUnder(t, etcd.Client(t), record.NamePath("skydns", "shop.eu1.openmcp.cluster")+"/")
	mxKey := record.MX(10, "mx.eu1.openmcp.cluster").Key("skydns", "shop.eu1.openmcp.cluster", "eu1")
	var direct int
	for k := range keys {
		if strings.Count(k, "/") == strings.Count(mxKey, "/") {
			direct++
		}
	}
	if direct != 3 {
		t.Errorf("shop has %d keys of its own, want 3 (A, MX, TXT): %v", direct, keys)
	}
	mx, ok := keys[mxKey]
	if !ok {
		t.Fatalf("no MX key %s among %v", mxKey, keys)
	}
	v, err := record.ParseValue([]byte(mx.Value))
	if err != nil || v.Host != "mx.eu1.openmcp.cluster" || !v.Mail || v.Priority != 10 || v.TargetStrip != 0 || v.Owner != "eu1" {
		t.Errorf("MX value %s (%v)", mx.Value, err)
	}

	// An update is a watch and a transaction away.
	res := dyn.Resource(source.DNSEndpointGVR).Namespace("dns")
	u, err := res.Get(context.Background(), "records", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eps, _, _ := unstructured.NestedSlice(u.Object, "spec", "endpoints")
	eps[0] = entry("app.eu1.openmcp.cluster", "A", 60, "203.0.113.70")
	if err := unstructured.SetNestedSlice(u.Object, eps, "spec", "endpoints"); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if _, err := res.Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e2e.WaitFor(t, 10*time.Second, central.DNS, "app.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.70"))
	t.Logf("DNSEndpoint updated -> answered by the central server: %s", time.Since(start))

	k8s.WaitWarningEvents("dns", source.KindDNSEndpoint, "records", string(source.CauseInvalidTarget), 10*time.Second)
	// Counted once, though the update recomputed the DNSEndpoint with the entry still invalid.
	metrics, _ := e2e.HTTPGet("http://" + writer.Metrics + "/metrics")
	e2e.CheckSeries(t, metrics, `coredns_gatewaydns_source_rejections_total{cause="InvalidTarget",kind="DNSEndpoint",owner="eu1"}`, 1)
	e2e.WaitObservedGeneration(t, res, "records", 10*time.Second)
}
