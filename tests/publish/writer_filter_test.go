package publish

import (
	"testing"
	"time"

	"github.com/miekg/dns"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// TestWriterLeavesNamesOutsideItsFilterAlone: as in external-dns, a name the domain filter
// refuses (here: one put under a new exclusion) is neither written nor deleted. A writer
// restarted with `exclude-domains legacy.eu1.openmcp.cluster` keeps the records it had
// published there untouched, publishes no new name there, and still publishes and deletes
// everywhere else: its first full resync, which deletes a route removed while it was down,
// leaves the excluded names as they were.
func TestWriterLeavesNamesOutsideItsFilterAlone(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "", "203.0.113.50")
	k8s.HTTPRoute("infra", "app", "infra", "public", "app.eu1.openmcp.cluster")
	k8s.HTTPRoute("infra", "goes", "infra", "public", "goes.eu1.openmcp.cluster")
	k8s.HTTPRoute("infra", "old", "infra", "public", "old.legacy.eu1.openmcp.cluster")

	central := e2e.RunCentral(t, etcd.ClientURL)
	w := e2e.RunWriter(t, "writer", etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster")
	w.WaitReady(t, 30*time.Second)
	for _, n := range []string{"app", "goes", "old.legacy"} {
		e2e.WaitFor(t, 15*time.Second, central.DNS, n+".eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.50"))
	}
	const legacy = "/skydns/cluster/openmcp/eu1/legacy/"
	before := e2e.KeysUnder(t, cli, legacy)
	if len(before) != 1 {
		t.Fatalf("keys under %s: %v, want the one record of old.legacy", legacy, before)
	}
	w.Stop(t)

	// While the writer is down: one route goes, one new route appears in the excluded domain.
	k8s.DeleteHTTPRoute("infra", "goes")
	k8s.HTTPRoute("infra", "new", "infra", "public", "new.legacy.eu1.openmcp.cluster")

	again := e2e.RunWriter(t, "writer-excluding", etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster",
		"exclude-domains legacy.eu1.openmcp.cluster")
	again.WaitReady(t, 30*time.Second)
	// The resync after the caches synced deleted the route removed meanwhile: it planned every
	// name this owner holds, the excluded ones included.
	e2e.WaitFor(t, 15*time.Second, central.DNS, "goes.eu1.openmcp.cluster.", dns.TypeA, e2e.IsNXDOMAIN)
	again.WaitMetric(t, 15*time.Second, `coredns_gatewaydns_writer_last_sync_timestamp_seconds{owner="eu1"}`, func(v float64) bool { return v > 0 })

	e2e.WaitFor(t, time.Second, central.DNS, "old.legacy.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.50"))
	e2e.WaitFor(t, time.Second, central.DNS, "app.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.50"))
	after := e2e.KeysUnder(t, cli, legacy)
	for k, kv := range before {
		if got, ok := after[k]; !ok || got.ModRev != kv.ModRev {
			t.Errorf("excluded key %s was touched: before %+v, after %+v (present=%v)", k, kv, got, ok)
		}
	}
	if len(after) != len(before) {
		t.Errorf("keys under the excluded domain: %v, want only the ones from before the exclusion %v", after, before)
	}
	if r := e2e.Ask(t, "udp", central.DNS, "new.legacy.eu1.openmcp.cluster.", dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Errorf("a new name in the excluded domain was published:\n%v", r)
	}
}
