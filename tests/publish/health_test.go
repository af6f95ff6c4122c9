package publish

import (
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// TestSharedNameAnswersOnlyHealthyClusters: two owners publish one name through their own
// Gateway (one namespace each stands for a cluster). When one Gateway's Programmed condition
// turns False, the central server answers only the other cluster's address within 1 s; when
// it is Programmed again, both addresses return within 1 s. A route of the healthy Gateway is
// not affected at any moment.
func TestSharedNameAnswersOnlyHealthyClusters(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	const name = "app.global.openmcp.cluster."
	for _, c := range []struct{ ns, addr string }{{"eu1", "203.0.113.61"}, {"us1", "203.0.113.62"}} {
		k8s.Namespace(c.ns)
		k8s.Gateway(c.ns, "gw", gatewayv1.HTTPProtocolType, 80, "", c.addr)
		k8s.SetGatewayProgrammed(c.ns, "gw", metav1.ConditionTrue)
		k8s.HTTPRoute(c.ns, "app", c.ns, "gw", "app.global.openmcp.cluster")
	}
	central := e2e.RunCentral(t, etcd.ClientURL)
	eu1 := e2e.RunWriter(t, "eu1", etcd.ClientURL, "eu1", kube.KubeconfigFile, "global.openmcp.cluster", "namespaces eu1")
	us1 := e2e.RunWriter(t, "us1", etcd.ClientURL, "us1", kube.KubeconfigFile, "global.openmcp.cluster", "namespaces us1")
	for _, w := range []*corednsproc.Process{eu1, us1} {
		w.WaitReady(t, 60*time.Second)
	}
	e2e.WaitFor(t, 15*time.Second, central.DNS, name, dns.TypeA, e2e.AnswersWith("203.0.113.61", "203.0.113.62"))

	for _, step := range []struct {
		status metav1.ConditionStatus
		want   []string
	}{
		{metav1.ConditionFalse, []string{"203.0.113.62"}},
		{metav1.ConditionTrue, []string{"203.0.113.61", "203.0.113.62"}},
	} {
		changed := time.Now()
		k8s.SetGatewayProgrammed("eu1", "gw", step.status)
		took, ok, last := e2e.TimeToAnswer(central.DNS, name, changed, 5*time.Second, step.want...)
		t.Logf("eu1's Gateway Programmed=%s: answered %v after %s", step.status, step.want, took.Round(time.Millisecond))
		if !ok || took > time.Second {
			t.Errorf("eu1's Gateway Programmed=%s: want %v within 1s, answered=%v after %s; last: %s", step.status, step.want, ok, took.Round(time.Millisecond), last)
		}
	}
	// The second the Gateway was not Programmed raised no Event on the route: a state that a
	// gateway controller ends within kubesource.DefaultPendingGrace is normal work (the grace
	// is pinned in kubesource; publish_test waits one out for a LoadBalancer Service).
}
