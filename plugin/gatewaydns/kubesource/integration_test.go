package kubesource

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// The integration tests run the Watcher against a real kube-apiserver (testenv) with the
// Gateway API CRDs, playing the gateway controller's part by hand: Gateway status.addresses,
// route status.parents Accepted=True and Ingress status.loadBalancer are set with UpdateStatus.

const waitFor = 20 * time.Second

// cluster is a kube-apiserver with clients, as a gateway controller would hold them.
type cluster struct {
	t    *testing.T
	ctx  context.Context
	env  *testenv.Kube
	kube kubernetes.Interface
	gw   gwclient.Interface
}

func startCluster(t *testing.T, opts ...testenv.KubeOption) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	env := testenv.StartKubeAPIServer(t, opts...)
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gwclient.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &cluster{t: t, ctx: ctx, env: env, kube: kube, gw: gw}
}

func (c *cluster) must(err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) namespace(name string, labels map[string]string) {
	c.t.Helper()
	_, err := c.kube.CoreV1().Namespaces().Create(c.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	c.must(err)
}

func (c *cluster) setNamespaceLabels(name string, labels map[string]string) {
	c.t.Helper()
	ns, err := c.kube.CoreV1().Namespaces().Get(c.ctx, name, metav1.GetOptions{})
	c.must(err)
	ns.Labels = labels
	_, err = c.kube.CoreV1().Namespaces().Update(c.ctx, ns, metav1.UpdateOptions{})
	c.must(err)
}

func (c *cluster) gatewayClass() {
	c.t.Helper()
	_, err := c.gw.GatewayV1().GatewayClasses().Create(c.ctx, &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gc"},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: controllerName},
	}, metav1.CreateOptions{})
	c.must(err)
}

// gateway creates a Gateway and gives it status addresses.
func (c *cluster) gateway(gw *gatewayv1.Gateway, ips ...string) {
	c.t.Helper()
	created, err := c.gw.GatewayV1().Gateways(gw.Namespace).Create(c.ctx, gw, metav1.CreateOptions{})
	c.must(err)
	c.gatewayAddresses(created.Namespace, created.Name, ips...)
}

func (c *cluster) gatewayAddresses(namespace, name string, ips ...string) {
	c.t.Helper()
	gw, err := c.gw.GatewayV1().Gateways(namespace).Get(c.ctx, name, metav1.GetOptions{})
	c.must(err)
	gw.Status.Addresses = ipAddresses(ips...)
	_, err = c.gw.GatewayV1().Gateways(namespace).UpdateStatus(c.ctx, gw, metav1.UpdateOptions{})
	c.must(err)
}

func (c *cluster) httpRoute(namespace, name string, hosts []string, annotations map[string]string, parents ...gatewayv1.ParentReference) {
	c.t.Helper()
	r, err := c.gw.GatewayV1().HTTPRoutes(namespace).Create(c.ctx, &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parents},
			Hostnames:       hostnames(hosts...),
		},
	}, metav1.CreateOptions{})
	c.must(err)
	r.Status.RouteStatus = acceptedBy(parents...)
	_, err = c.gw.GatewayV1().HTTPRoutes(namespace).UpdateStatus(c.ctx, r, metav1.UpdateOptions{})
	c.must(err)
}

func (c *cluster) grpcRoute(namespace, name string, hosts []string, parents ...gatewayv1.ParentReference) {
	c.t.Helper()
	r, err := c.gw.GatewayV1().GRPCRoutes(namespace).Create(c.ctx, &gatewayv1.GRPCRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: gatewayv1.GRPCRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parents},
			Hostnames:       hostnames(hosts...),
		},
	}, metav1.CreateOptions{})
	c.must(err)
	r.Status.RouteStatus = acceptedBy(parents...)
	_, err = c.gw.GatewayV1().GRPCRoutes(namespace).UpdateStatus(c.ctx, r, metav1.UpdateOptions{})
	c.must(err)
}

func (c *cluster) tlsRoute(namespace, name string, hosts []string, parents ...gatewayv1.ParentReference) {
	c.t.Helper()
	r, err := c.gw.GatewayV1().TLSRoutes(namespace).Create(c.ctx, &gatewayv1.TLSRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: gatewayv1.TLSRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parents},
			Hostnames:       hostnames(hosts...),
			Rules: []gatewayv1.TLSRouteRule{{BackendRefs: []gatewayv1.BackendRef{{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: "backend", Port: ptr(gatewayv1.PortNumber(443))},
			}}}},
		},
	}, metav1.CreateOptions{})
	c.must(err)
	r.Status.RouteStatus = acceptedBy(parents...)
	_, err = c.gw.GatewayV1().TLSRoutes(namespace).UpdateStatus(c.ctx, r, metav1.UpdateOptions{})
	c.must(err)
}

func (c *cluster) ingress(namespace, name, host, lbIP string) {
	c.t.Helper()
	ing, err := c.kube.NetworkingV1().Ingresses(namespace).Create(c.ctx, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{Host: host}},
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
				Name: "backend", Port: networkingv1.ServiceBackendPort{Number: 80},
			}},
		},
	}, metav1.CreateOptions{})
	c.must(err)
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: lbIP}}
	_, err = c.kube.NetworkingV1().Ingresses(namespace).UpdateStatus(c.ctx, ing, metav1.UpdateOptions{})
	c.must(err)
}

// watch starts a Watcher on the cluster for kinds (none: the default ones); it is stopped (and checked for leftover goroutines)
// when the test ends.
func (c *cluster) watch(cfg source.Config, obs Observer, kinds ...string) *Watcher {
	c.t.Helper()
	return c.watchAs(c.env.Config, cfg, obs, kinds...)
}

// watchAs is watch with the identity of rc.
func (c *cluster) watchAs(rc *rest.Config, cfg source.Config, obs Observer, kinds ...string) *Watcher {
	c.t.Helper()
	before := goroutines()
	// A short grace: the tests that wait for a pending cause's Event see the path a real one takes.
	w, err := New(rc, Options{Config: cfg, Observer: obs, DiscoveryInterval: 500 * time.Millisecond, Kinds: kinds, PendingGrace: 300 * time.Millisecond})
	c.must(err)
	c.must(w.Start(c.ctx))
	c.t.Cleanup(func() {
		stop := time.Now()
		w.Stop()
		stopped := time.Since(stop)
		checkNoLeaks(c.t, before)
		c.t.Logf("watcher stopped in %v, goroutines gone in %v", stopped.Round(time.Millisecond), time.Since(stop).Round(time.Millisecond))
	})
	return w
}

func waitSynced(t *testing.T, w *Watcher) {
	t.Helper()
	select {
	case <-w.SyncedC():
	case <-time.After(waitFor):
		t.Fatalf("the watcher did not sync within %v", waitFor)
	}
}

// TestIntegrationGatewayAPI runs the publish path's source against a kube-apiserver with the
// standard Gateway API CRDs: HTTPRoute, GRPCRoute, TLSRoute and Ingress publish; a Gateway
// address change, a namespace label change, a route moving to another Gateway and deletes are
// followed; a rejected hostname becomes a Warning Event on its route.
func TestIntegrationGatewayAPI(t *testing.T) {
	start := time.Now()
	c := startCluster(t)
	t.Logf("kube-apiserver up in %v", time.Since(start).Round(time.Millisecond))

	c.namespace("infra", nil)
	c.namespace("apps", map[string]string{"dns": "yes"})
	c.gatewayClass()
	c.gateway(newGateway("infra", "gw-a",
		listener("http", gatewayv1.HTTPProtocolType, 80, "*.example.com", gatewayv1.NamespacesFromSelector, map[string]string{"dns": "yes"}),
		listener("tls", gatewayv1.TLSProtocolType, 443, "*.tls.example.com", gatewayv1.NamespacesFromAll, nil),
	), "192.0.2.1")
	c.gateway(newGateway("infra", "gw-b",
		listener("http", gatewayv1.HTTPProtocolType, 80, "*.example.com", gatewayv1.NamespacesFromAll, nil),
	), "192.0.2.2")
	gwA, gwB := parentRef("infra", "gw-a", ""), parentRef("infra", "gw-b", "")
	// One route exists before the watcher starts (the initial list), the others come after.
	c.httpRoute("apps", "web", []string{"web.example.com"}, nil, gwA)

	obs := newRecordingObserver()
	cfg := source.Config{DomainFilter: source.NewDomainFilter([]string{"example.com"}, nil)}
	started := time.Now()
	w := c.watch(cfg, obs)
	waitSynced(t, w)
	t.Logf("watcher synced %v after its start", time.Since(started).Round(time.Millisecond))
	if ok, state := endpointIs(w, "web.example.com", "192.0.2.1")(); !ok {
		t.Fatalf("at sync: %s", state)
	}
	for _, kind := range []string{source.KindGateway, source.KindHTTPRoute, source.KindGRPCRoute, source.KindTLSRoute, source.KindTCPRoute, source.KindUDPRoute} {
		if v := w.Kinds()[kind]; v != "v1" {
			t.Errorf("%s watched at %q, want v1", kind, v)
		}
	}

	c.grpcRoute("apps", "grpc", []string{"grpc.example.com"}, gwA)
	c.tlsRoute("apps", "secure", []string{"secure.tls.example.com"}, parentRef("infra", "gw-a", "tls"))
	c.ingress("apps", "ing", "ing.example.com", "192.0.2.10")
	c.httpRoute("apps", "bad", nil, map[string]string{source.AnnotationPrefix + source.HostnameAnnotation: "bad_name.example.com"}, gwA)
	eventually(t, waitFor, "grpc", endpointIs(w, "grpc.example.com", "192.0.2.1"))
	eventually(t, waitFor, "secure", endpointIs(w, "secure.tls.example.com", "192.0.2.1"))
	eventually(t, waitFor, "ing", endpointIs(w, "ing.example.com", "192.0.2.10"))
	step := time.Now()

	// The Gateway's address changes: every route attached to it follows.
	c.gatewayAddresses("infra", "gw-a", "192.0.2.9")
	for _, name := range []string{"web.example.com", "grpc.example.com", "secure.tls.example.com"} {
		eventually(t, waitFor, name+" after the Gateway address change", endpointIs(w, name, "192.0.2.9"))
	}
	t.Logf("Gateway address change followed in %v", time.Since(step).Round(time.Millisecond))

	// The namespace no longer matches the http listener's selector: its routes there stop
	// publishing through it; the tls listener admits all namespaces.
	c.setNamespaceLabels("apps", nil)
	eventually(t, waitFor, "web gone with the namespace label", endpointIs(w, "web.example.com"))
	eventually(t, waitFor, "grpc gone with the namespace label", endpointIs(w, "grpc.example.com"))
	if ok, state := endpointIs(w, "secure.tls.example.com", "192.0.2.9")(); !ok {
		t.Errorf("secure must stay: %s", state)
	}
	c.setNamespaceLabels("apps", map[string]string{"dns": "yes"})
	eventually(t, waitFor, "web back with the namespace label", endpointIs(w, "web.example.com", "192.0.2.9"))

	// The route moves to gw-b. Its status keeps a stale Accepted entry for gw-a, as a slow
	// controller might leave it: spec.parentRefs decides, so only gw-b's address is published.
	step = time.Now()
	web, err := c.gw.GatewayV1().HTTPRoutes("apps").Get(c.ctx, "web", metav1.GetOptions{})
	c.must(err)
	web.Spec.ParentRefs = []gatewayv1.ParentReference{gwB}
	web, err = c.gw.GatewayV1().HTTPRoutes("apps").Update(c.ctx, web, metav1.UpdateOptions{})
	c.must(err)
	web.Status.RouteStatus = acceptedBy(gwA, gwB)
	_, err = c.gw.GatewayV1().HTTPRoutes("apps").UpdateStatus(c.ctx, web, metav1.UpdateOptions{})
	c.must(err)
	eventually(t, waitFor, "web through gw-b only", endpointIs(w, "web.example.com", "192.0.2.2"))
	t.Logf("route move followed in %v", time.Since(step).Round(time.Millisecond))
	// gw-a changes again: web is no longer attached to it and stays put.
	c.gatewayAddresses("infra", "gw-a", "192.0.2.11")
	eventually(t, waitFor, "grpc after the second address change", endpointIs(w, "grpc.example.com", "192.0.2.11"))
	if ok, state := endpointIs(w, "web.example.com", "192.0.2.2")(); !ok {
		t.Errorf("web must not follow gw-a any more: %s", state)
	}

	// Deletes.
	c.must(c.gw.GatewayV1().TLSRoutes("apps").Delete(c.ctx, "secure", metav1.DeleteOptions{}))
	eventually(t, waitFor, "secure gone", endpointIs(w, "secure.tls.example.com"))
	c.must(c.kube.NetworkingV1().Ingresses("apps").Delete(c.ctx, "ing", metav1.DeleteOptions{}))
	eventually(t, waitFor, "ing gone", endpointIs(w, "ing.example.com"))
	c.must(c.gw.GatewayV1().Gateways("infra").Delete(c.ctx, "gw-b", metav1.DeleteOptions{}))
	eventually(t, waitFor, "web gone with gw-b", endpointIs(w, "web.example.com"))

	// The rejected hostname is a Warning Event on the route, reported once.
	eventually(t, waitFor, "the InvalidHostname Event on HTTPRoute bad", func() (bool, string) {
		evs := warningEvents(t, c.kube, "apps", source.KindHTTPRoute, "bad", string(source.CauseInvalidHostname))
		if len(evs) == 0 {
			return false, "no event"
		}
		e := evs[0]
		return e.InvolvedObject.APIVersion == "gateway.networking.k8s.io/v1" && e.InvolvedObject.UID != "" &&
			e.Source.Component == DefaultComponent && e.Count == 1, e.Message
	})
	if n := obs.rejections(source.KindHTTPRoute, source.CauseInvalidHostname); n != 1 {
		t.Errorf("InvalidHostname counted %d times, want 1 (the route was recomputed on every gw-a change)", n)
	}
	if !w.Synced() {
		t.Errorf("Synced() went false")
	}
	got := map[string]bool{}
	for _, ep := range w.Desired().Endpoints() {
		got[ep.Name] = true
	}
	if len(got) != 1 || !got["grpc.example.com"] {
		t.Errorf("endpoints left: %v, want only grpc.example.com", got)
	}
}

// TestIntegrationMissingCRDs starts the Watcher on a cluster without the TLSRoute and GRPCRoute
// CRDs: the kinds that exist publish, Synced becomes true, and a TLSRoute CRD installed later
// is watched without restarting the Watcher.
func TestIntegrationMissingCRDs(t *testing.T) {
	start := time.Now()
	c := startCluster(t, testenv.WithoutCRDs("TLSRoute", "GRPCRoute"))
	t.Logf("kube-apiserver up in %v", time.Since(start).Round(time.Millisecond))

	c.namespace("apps", nil)
	c.gatewayClass()
	c.gateway(newGateway("apps", "gw",
		listener("http", gatewayv1.HTTPProtocolType, 80, "*.example.com", gatewayv1.NamespacesFromSame, nil),
		listener("tls", gatewayv1.TLSProtocolType, 443, "*.example.com", gatewayv1.NamespacesFromSame, nil),
	), "192.0.2.1")
	gw := parentRef("apps", "gw", "")

	obs := newRecordingObserver()
	started := time.Now()
	w := c.watch(source.Config{}, obs)
	waitSynced(t, w)
	t.Logf("watcher synced %v after its start", time.Since(started).Round(time.Millisecond))
	for _, kind := range []string{source.KindTLSRoute, source.KindGRPCRoute} {
		if h := obs.servedHistory(kind); len(h) != 1 || h[0] {
			t.Errorf("%s served history %v, want [false]", kind, h)
		}
		if _, ok := w.Kinds()[kind]; ok {
			t.Errorf("%s is watched", kind)
		}
	}

	c.httpRoute("apps", "web", []string{"web.example.com"}, nil, gw)
	c.ingress("apps", "ing", "ing.example.com", "192.0.2.10")
	eventually(t, waitFor, "web", endpointIs(w, "web.example.com", "192.0.2.1"))
	eventually(t, waitFor, "ing", endpointIs(w, "ing.example.com", "192.0.2.10"))

	step := time.Now()
	c.env.InstallCRD(t, "TLSRoute")
	c.tlsRoute("apps", "secure", []string{"secure.example.com"}, parentRef("apps", "gw", "tls"))
	eventually(t, waitFor, "the TLSRoute installed later", endpointIs(w, "secure.example.com", "192.0.2.1"))
	t.Logf("TLSRoute CRD picked up and published %v after install", time.Since(step).Round(time.Millisecond))
	if h := obs.servedHistory(source.KindTLSRoute); len(h) != 2 || !h[1] {
		t.Errorf("TLSRoute served history %v, want [false true]", h)
	}
	if h := obs.servedHistory(source.KindGRPCRoute); len(h) != 1 {
		t.Errorf("GRPCRoute reported %v: a kind still missing is reported once", h)
	}
	if !w.Synced() {
		t.Errorf("Synced() went false")
	}
}

// TestIntegrationGatewayFilters: on a real kube-apiserver, gateway-label-filter and
// gateway-namespace choose the Gateways routes publish through, and a Gateway relabelled into
// the filter brings its routes' names with it; gateway-name chooses Gateways by name in every
// namespace.
func TestIntegrationGatewayFilters(t *testing.T) {
	c := startCluster(t)
	c.namespace("infra", nil)
	c.namespace("edge", nil)
	c.gatewayClass()
	all := listener("http", gatewayv1.HTTPProtocolType, 80, "", gatewayv1.NamespacesFromAll, nil)
	public, private, other := newGateway("infra", "public", all), newGateway("infra", "private", all), newGateway("edge", "public", all)
	public.Labels = map[string]string{"dns": "public"}
	private.Labels = map[string]string{"dns": "private"}
	other.Labels = map[string]string{"dns": "public"}
	c.gateway(public, "192.0.2.31")
	c.gateway(private, "192.0.2.32")
	c.gateway(other, "192.0.2.33")
	c.httpRoute("infra", "a", []string{"a.example.com"}, nil, parentRef("infra", "public", ""))
	c.httpRoute("infra", "b", []string{"b.example.com"}, nil, parentRef("infra", "private", ""))
	c.httpRoute("edge", "c", []string{"c.example.com"}, nil, parentRef("edge", "public", ""))

	sel, err := labels.Parse("dns=public")
	if err != nil {
		t.Fatal(err)
	}
	w := c.watch(source.Config{GatewayLabelSelector: sel, GatewayNamespace: "infra"}, newRecordingObserver())
	waitSynced(t, w)
	eventually(t, waitFor, "a through the public Gateway of infra", endpointIs(w, "a.example.com", "192.0.2.31"))
	for _, name := range []string{"b.example.com", "c.example.com"} {
		if ok, state := endpointIs(w, name)(); !ok {
			t.Errorf("published through a Gateway the filters leave out: %s", state)
		}
	}

	gw, err := c.gw.GatewayV1().Gateways("infra").Get(c.ctx, "private", metav1.GetOptions{})
	c.must(err)
	gw.Labels = map[string]string{"dns": "public"}
	_, err = c.gw.GatewayV1().Gateways("infra").Update(c.ctx, gw, metav1.UpdateOptions{})
	c.must(err)
	eventually(t, waitFor, "b once its Gateway is relabelled into the filter", endpointIs(w, "b.example.com", "192.0.2.32"))

	// gateway-name: the Gateways of that name, in any namespace, whatever their labels.
	byName := c.watch(source.Config{GatewayName: "public"}, newRecordingObserver())
	waitSynced(t, byName)
	eventually(t, waitFor, "a through infra/public", endpointIs(byName, "a.example.com", "192.0.2.31"))
	eventually(t, waitFor, "c through edge/public", endpointIs(byName, "c.example.com", "192.0.2.33"))
	if ok, state := endpointIs(byName, "b.example.com")(); !ok {
		t.Errorf("published through a Gateway of another name: %s", state)
	}
	c.must(c.gw.GatewayV1().Gateways("edge").Delete(c.ctx, "public", metav1.DeleteOptions{}))
	eventually(t, waitFor, "c gone with edge/public", endpointIs(byName, "c.example.com"))
	c.gateway(newGateway("edge", "private", all), "192.0.2.34")
	c.httpRoute("edge", "d", []string{"d.example.com"}, nil, parentRef("edge", "private", ""))
	c.httpRoute("edge", "e", []string{"e.example.com"}, nil, parentRef("infra", "public", ""))
	eventually(t, waitFor, "a route of another namespace through infra/public", endpointIs(byName, "e.example.com", "192.0.2.31"))
	if ok, state := endpointIs(byName, "d.example.com")(); !ok {
		t.Errorf("published through edge/private: %s", state)
	}
}
