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

// TestADeletedCRDWithdrawsItsNamesAndOnlyThose: nothing is deleted because it was not seen
// (a 404 from discovery, an API server starting: kubesource's TestIntegrationA404ForAServed-
// GroupIsNotAbsence, TestWriterKeepsItsNamesWhileKubeAPIServerRestarts), but a CRD seen gone is
// absence. Deleting the HTTPRoute CRD (and with it every HTTPRoute) withdraws the route's name
// from etcd and from the answers, and only it: the Ingress's name, of a kind still served,
// stays. Deleted while the writer runs, it sees the routes go; deleted while the writer is
// down, the writer that starts finds the kind absent (its CRD read back) and deletes the keys
// that name it.
func TestADeletedCRDWithdrawsItsNamesAndOnlyThose(t *testing.T) {
	for _, tc := range []struct {
		name         string
		writerIsDown bool
	}{
		{"while the writer runs", false},
		{"while the writer is down", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			etcd := testenv.StartEtcd(t)
			kube := testenv.StartKubeAPIServer(t)
			k8s := gatewayfixture.New(t, kube.Config)
			k8s.Namespace("infra")
			k8s.Namespace("shop")
			k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "*.eu1.openmcp.cluster", "203.0.113.10")
			k8s.HTTPRoute("shop", "web", "infra", "public", "web.eu1.openmcp.cluster")
			k8s.Ingress("shop", "legacy", "legacy.eu1.openmcp.cluster", "203.0.113.20")
			env := []string{
				"GATEWAYDNS_ETCD_ENDPOINTS=" + etcd.ClientURL,
				"GATEWAYDNS_OWNER=eu1",
				"GATEWAYDNS_DOMAIN=eu1.openmcp.cluster",
				"GATEWAYDNS_KUBECONFIG=" + kube.KubeconfigFile,
			}
			p := e2e.RunCorefile(t, "all-in-one.Corefile", env...)
			p.WaitReady(t, 60*time.Second)
			e2e.WaitFor(t, 15*time.Second, p.DNS, "web.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.10"))
			e2e.WaitFor(t, 15*time.Second, p.DNS, "legacy.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.20"))

			var legacy *e2e.DNSPoller
			if tc.writerIsDown {
				p.Stop(t)
			} else {
				legacy = e2e.PollDNS(p.DNS, "legacy.eu1.openmcp.cluster.", "203.0.113.20")
			}
			deleted := time.Now()
			kube.UninstallCRD(t, "HTTPRoute")
			if tc.writerIsDown {
				p = e2e.RunCorefile(t, "all-in-one.Corefile", env...)
				p.WaitReady(t, 60*time.Second)
			}
			e2e.WaitFor(t, 30*time.Second, p.DNS, "web.eu1.openmcp.cluster.", dns.TypeA, e2e.IsNXDOMAIN)
			t.Logf("web.eu1 answered NXDOMAIN %v after the CRD's delete", time.Since(deleted).Round(time.Millisecond))
			if legacy != nil {
				legacy.Finish(t, "legacy.eu1.openmcp.cluster, an Ingress, while the HTTPRoute CRD was deleted")
			}
			e2e.WaitFor(t, 5*time.Second, p.DNS, "legacy.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.20"))

			cli := etcd.Client(t)
			for prefix, want := range map[string]int{
				"/skydns/cluster/openmcp/eu1/web/":    0,
				"/skydns/cluster/openmcp/eu1/legacy/": 1,
			} {
				if got := len(e2e.KeysUnder(t, cli, prefix)); got != want {
					t.Errorf("%s holds %d keys after the HTTPRoute CRD's delete, want %d", prefix, got, want)
				}
			}
		})
	}
}
