package kubesource

import (
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// TestIntegrationV1beta1OnlyGatewayAndHTTPRoute: on a cluster whose Gateway and HTTPRoute CRDs
// serve v1beta1 only (gateway-api before v1.0, as some platforms still ship them), the Watcher
// reads them at v1beta1, publishes the routes, and follows a change; where v1 is served it
// is read at v1 (TestIntegrationGatewayAPI).
func TestIntegrationV1beta1OnlyGatewayAndHTTPRoute(t *testing.T) {
	c := startCluster(t, testenv.WithoutCRDs("Gateway", "HTTPRoute"))
	crds, err := testenv.GatewayAPICRDs(testenv.CRDStandard)
	c.must(err)
	var old []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range crds {
		if k := crd.Spec.Names.Kind; k != source.KindGateway && k != source.KindHTTPRoute {
			continue
		}
		var versions []apiextensionsv1.CustomResourceDefinitionVersion
		for _, v := range crd.Spec.Versions {
			if v.Name == "v1beta1" {
				v.Served, v.Storage = true, true
				versions = append(versions, v)
			}
		}
		crd.Spec.Versions = versions
		old = append(old, crd)
	}
	if len(old) != 2 {
		t.Fatalf("found %d of the Gateway and HTTPRoute CRDs", len(old))
	}
	_, err = envtest.InstallCRDs(c.env.Config, envtest.CRDInstallOptions{CRDs: old, MaxTime: 30 * time.Second})
	c.must(err)

	c.namespace("apps", nil)
	c.gatewayClass()
	gw, err := c.gw.GatewayV1beta1().Gateways("apps").Create(c.ctx, (*gatewayv1beta1.Gateway)(newGateway("apps", "gw",
		listener("http", gatewayv1.HTTPProtocolType, 80, "*.example.com", gatewayv1.NamespacesFromSame, nil))), metav1.CreateOptions{})
	c.must(err)
	gw.Status.Addresses = ipAddresses("192.0.2.1")
	_, err = c.gw.GatewayV1beta1().Gateways("apps").UpdateStatus(c.ctx, gw, metav1.UpdateOptions{})
	c.must(err)
	pr := parentRef("apps", "gw", "")
	route := &gatewayv1beta1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}}
	route.Spec.ParentRefs = []gatewayv1.ParentReference{pr}
	route.Spec.Hostnames = hostnames("web.example.com")
	route, err = c.gw.GatewayV1beta1().HTTPRoutes("apps").Create(c.ctx, route, metav1.CreateOptions{})
	c.must(err)
	route.Status.RouteStatus = acceptedBy(pr)
	_, err = c.gw.GatewayV1beta1().HTTPRoutes("apps").UpdateStatus(c.ctx, route, metav1.UpdateOptions{})
	c.must(err)

	w := c.watch(source.Config{}, newRecordingObserver())
	waitSynced(t, w)
	for kind, want := range map[string]string{source.KindGateway: "v1beta1", source.KindHTTPRoute: "v1beta1", source.KindGRPCRoute: "v1"} {
		if v := w.Kinds()[kind]; v != want {
			t.Errorf("%s watched at %q, want %s", kind, v, want)
		}
	}
	if ok, state := endpointIs(w, "web.example.com", "192.0.2.1")(); !ok {
		t.Fatalf("at sync: %s", state)
	}
	// A change through the v1beta1 watch: the Gateway's address.
	gw, err = c.gw.GatewayV1beta1().Gateways("apps").Get(c.ctx, "gw", metav1.GetOptions{})
	c.must(err)
	gw.Status.Addresses = ipAddresses("192.0.2.9")
	_, err = c.gw.GatewayV1beta1().Gateways("apps").UpdateStatus(c.ctx, gw, metav1.UpdateOptions{})
	c.must(err)
	eventually(t, waitFor, "web after the v1beta1 Gateway's address change", endpointIs(w, "web.example.com", "192.0.2.9"))
	c.httpRouteV1beta1("apps", "api", "api.example.com", pr)
	eventually(t, waitFor, "a v1beta1 HTTPRoute created after the start", endpointIs(w, "api.example.com", "192.0.2.9"))
}

func (c *cluster) httpRouteV1beta1(namespace, name, host string, pr gatewayv1.ParentReference) {
	c.t.Helper()
	r := &gatewayv1beta1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	r.Spec.ParentRefs = []gatewayv1.ParentReference{pr}
	r.Spec.Hostnames = hostnames(host)
	r, err := c.gw.GatewayV1beta1().HTTPRoutes(namespace).Create(c.ctx, r, metav1.CreateOptions{})
	c.must(err)
	r.Status.RouteStatus = acceptedBy(pr)
	_, err = c.gw.GatewayV1beta1().HTTPRoutes(namespace).UpdateStatus(c.ctx, r, metav1.UpdateOptions{})
	c.must(err)
}
