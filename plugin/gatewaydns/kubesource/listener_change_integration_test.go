package kubesource

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// batchLog records each OnChange call: the names, and which of them the Desired held then.
type batchLog struct {
	mu      sync.Mutex
	w       *Watcher
	batches [][]string // "+name" published, "-name" withdrawn
}

func (b *batchLog) OnChange(names []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var batch []string
	for _, n := range names {
		if _, ok := b.w.Desired().Endpoint(n); ok {
			batch = append(batch, "+"+n)
		} else {
			batch = append(batch, "-"+n)
		}
	}
	b.batches = append(b.batches, batch)
}

// swapped is a condition: one OnChange call withdrew gone and published came.
func (b *batchLog) swapped(gone, came string) func() (bool, string) {
	return func() (bool, string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, batch := range b.batches {
			if slices.Contains(batch, "-"+gone) && slices.Contains(batch, "+"+came) {
				return true, ""
			}
		}
		var all []string
		for _, batch := range b.batches {
			all = append(all, "["+strings.Join(batch, " ")+"]")
		}
		return false, "batches " + strings.Join(all, " ")
	}
}

// TestIntegrationListenerChangesAndGatewayController runs against a real kube-apiserver:
//   - a route whose sectionName moves to another listener, and a listener whose hostname
//     changes, replace the old listener's names by the new ones in one recomputation (one
//     OnChange call withdraws the old name and publishes the new);
//   - a Gateway whose controller annotation names another controller publishes none of its
//     routes, and publishes them again when the annotation goes (external-dns v0.23.0);
//   - the gateway-hostname-source annotation survives the informers' slimming.
func TestIntegrationListenerChangesAndGatewayController(t *testing.T) {
	c := startCluster(t)
	c.namespace("infra", nil)
	c.namespace("apps", nil)
	c.gatewayClass()
	c.gateway(newGateway("infra", "gw",
		listener("a", gatewayv1.HTTPProtocolType, 80, "a.example.com", gatewayv1.NamespacesFromAll, nil),
		listener("b", gatewayv1.HTTPProtocolType, 8080, "b.example.com", gatewayv1.NamespacesFromAll, nil),
		listener("c", gatewayv1.HTTPProtocolType, 8081, "*.c.example.com", gatewayv1.NamespacesFromAll, nil),
	), "192.0.2.1")
	refA, refB := parentRef("infra", "gw", "a"), parentRef("infra", "gw", "b")
	c.httpRoute("apps", "r", nil, nil, refA)
	c.httpRoute("apps", "annotated", []string{"spec.c.example.com"}, map[string]string{
		source.LegacyAnnotationPrefix + source.GatewayHostnameSourceAnnotation: "annotation-only",
		source.LegacyAnnotationPrefix + source.HostnameAnnotation:              "annotated.c.example.com",
	}, parentRef("infra", "gw", "c"))

	log := &batchLog{}
	before := goroutines()
	w, err := New(c.env.Config, Options{Config: source.Config{ControllerName: "gatewaydns"}, OnChange: log.OnChange, DiscoveryInterval: 500 * time.Millisecond})
	c.must(err)
	log.w = w
	c.must(w.Start(c.ctx))
	t.Cleanup(func() { w.Stop(); checkNoLeaks(t, before) })
	waitSynced(t, w)
	eventually(t, waitFor, "the route on listener a", endpointIs(w, "a.example.com", "192.0.2.1"))
	eventually(t, waitFor, "the annotation-only name", endpointIs(w, "annotated.c.example.com", "192.0.2.1"))
	if ok, state := endpointIs(w, "spec.c.example.com")(); !ok {
		t.Errorf("annotation-only route published its spec hostname: %s", state)
	}

	// sectionName a -> b. The Gateway's controller accepts the route for b; the one spec
	// write that moves the route is one recomputation.
	step := time.Now()
	r, err := c.gw.GatewayV1().HTTPRoutes("apps").Get(c.ctx, "r", metav1.GetOptions{})
	c.must(err)
	r.Status.RouteStatus = acceptedBy(refA, refB)
	r, err = c.gw.GatewayV1().HTTPRoutes("apps").UpdateStatus(c.ctx, r, metav1.UpdateOptions{})
	c.must(err)
	r.Spec.ParentRefs = []gatewayv1.ParentReference{refB}
	_, err = c.gw.GatewayV1().HTTPRoutes("apps").Update(c.ctx, r, metav1.UpdateOptions{})
	c.must(err)
	eventually(t, waitFor, "a.example.com withdrawn and b.example.com published in one change", log.swapped("a.example.com", "b.example.com"))
	for name, want := range map[string][]string{"a.example.com": nil, "b.example.com": {"192.0.2.1"}} {
		if ok, state := endpointIs(w, name, want...)(); !ok {
			t.Errorf("after the sectionName change: %s", state)
		}
	}
	t.Logf("sectionName change followed in %v", time.Since(step).Round(time.Millisecond))

	// Listener b's hostname changes: the route's name follows in one recomputation.
	step = time.Now()
	gw, err := c.gw.GatewayV1().Gateways("infra").Get(c.ctx, "gw", metav1.GetOptions{})
	c.must(err)
	gw.Spec.Listeners[1].Hostname = ptr(gatewayv1.Hostname("b2.example.com"))
	_, err = c.gw.GatewayV1().Gateways("infra").Update(c.ctx, gw, metav1.UpdateOptions{})
	c.must(err)
	eventually(t, waitFor, "b.example.com withdrawn and b2.example.com published in one change", log.swapped("b.example.com", "b2.example.com"))
	t.Logf("listener hostname change followed in %v", time.Since(step).Round(time.Millisecond))

	// The Gateway is annotated for another controller: none of its routes publish.
	setGatewayAnnotation := func(key, value string) {
		t.Helper()
		gw, err := c.gw.GatewayV1().Gateways("infra").Get(c.ctx, "gw", metav1.GetOptions{})
		c.must(err)
		setAnnotation(&gw.ObjectMeta, key, value)
		_, err = c.gw.GatewayV1().Gateways("infra").Update(c.ctx, gw, metav1.UpdateOptions{})
		c.must(err)
	}
	step = time.Now()
	setGatewayAnnotation(source.AnnotationPrefix+source.ControllerAnnotation, "someone-else")
	eventually(t, waitFor, "b2 gone with the Gateway's controller annotation", endpointIs(w, "b2.example.com"))
	eventually(t, waitFor, "annotated gone with the Gateway's controller annotation", endpointIs(w, "annotated.c.example.com"))
	t.Logf("Gateway controller annotation followed in %v", time.Since(step).Round(time.Millisecond))
	setGatewayAnnotation(source.AnnotationPrefix+source.ControllerAnnotation, "gatewaydns")
	eventually(t, waitFor, "b2 back when the annotation names this controller", endpointIs(w, "b2.example.com", "192.0.2.1"))
	setGatewayAnnotation(source.AnnotationPrefix+source.ControllerAnnotation, "")
	setGatewayAnnotation(source.LegacyAnnotationPrefix+source.ControllerAnnotation, "someone-else")
	eventually(t, waitFor, "b2 gone with the legacy controller annotation", endpointIs(w, "b2.example.com"))
}
