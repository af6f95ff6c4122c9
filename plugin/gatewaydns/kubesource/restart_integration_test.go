package kubesource

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// followBound is how soon after a kube-apiserver restart a Watcher must see what changed.
const followBound = time.Second

// TestEveryRestartOfTheAPIServerIsFollowedAtOnce restarts the kube-apiserver three times in a
// row under a Watcher. After each restart a route is created and the previous one deleted:
// Desired holds the new name, and no longer the old one, within followBound of the create,
// every time. client-go's informers would wait out a re-list back-off that grows with each
// restart (0.8 s doubling to 30 s, reset every 2 minutes); the gates wait for the API server's
// readiness instead. No name is dropped while the API server is down: the old route's name stays
// until the deletion is seen.
func TestEveryRestartOfTheAPIServerIsFollowedAtOnce(t *testing.T) {
	c := startCluster(t, testenv.WithAPIServerFlag("shutdown-watch-termination-grace-period", "2s"))
	c.namespace("infra", nil)
	c.gatewayClass()
	c.gateway(newGateway("infra", "gw",
		listener("http", gatewayv1.HTTPProtocolType, 80, "*.example.com", gatewayv1.NamespacesFromAll, nil)), "192.0.2.1")
	gw := parentRef("infra", "gw", "")
	c.httpRoute("infra", "r0", []string{"r0.example.com"}, nil, gw)
	w := c.watch(source.Config{DomainFilter: source.NewDomainFilter([]string{"example.com"}, nil)}, nil)
	waitSynced(t, w)

	var took []string
	for i := 1; i <= 3; i++ {
		c.env.StopAPIServer(t)
		if ok, state := endpointIs(w, fmt.Sprintf("r%d.example.com", i-1), "192.0.2.1")(); !ok {
			t.Errorf("restart %d: a name dropped while the API server is down: %s", i, state)
		}
		c.env.StartAPIServer(t)
		start := time.Now()
		c.httpRoute("infra", fmt.Sprintf("r%d", i), []string{fmt.Sprintf("r%d.example.com", i)}, nil, gw)
		c.must(c.gw.GatewayV1().HTTPRoutes("infra").Delete(c.ctx, fmt.Sprintf("r%d", i-1), metav1.DeleteOptions{}))
		eventually(t, waitFor, "the new route", endpointIs(w, fmt.Sprintf("r%d.example.com", i), "192.0.2.1"))
		eventually(t, waitFor, "the deleted route gone", endpointIs(w, fmt.Sprintf("r%d.example.com", i-1)))
		d := time.Since(start)
		took = append(took, d.Round(time.Millisecond).String())
		if d > followBound {
			t.Errorf("restart %d followed after %v, want within %v", i, d, followBound)
		}
	}
	t.Logf("3 restarts followed after %s", strings.Join(took, ", "))
}
