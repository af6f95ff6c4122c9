package kubesource

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

func TestTransformKeepsOnlyWhatTheMappingReads(t *testing.T) {
	sel, err := labels.Parse("team=web")
	if err != nil {
		t.Fatal(err)
	}
	cfg := source.Config{LabelSelector: sel}
	s := newSlimmer(&cfg)

	gw := newGateway("infra", "gw",
		listener("http", gatewayv1.HTTPProtocolType, 80, "*.example.com", gatewayv1.NamespacesFromAll, nil),
		listener("tls", gatewayv1.TLSProtocolType, 443, "*.tls.example.com", gatewayv1.NamespacesFromAll, nil))
	gw.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	gw.Annotations = map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": "{...}",
		source.AnnotationPrefix + source.TargetAnnotation:  "192.0.2.7",
		source.BaseDomainAnnotation:                        "example.com",
	}
	gw.Labels = map[string]string{"team": "web"}
	gw.Spec.Addresses = []gatewayv1.GatewaySpecAddress{{Value: "198.51.100.1"}}
	gw.Status.Addresses = ipAddresses("192.0.2.1")
	gw.Status.Conditions = []metav1.Condition{
		{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"},
		{Type: "Programmed", Status: metav1.ConditionFalse, Reason: "AddressNotAssigned", Message: "no LB yet", ObservedGeneration: 3, LastTransitionTime: metav1.Now()},
	}

	got, _ := s.Transform(gw)
	slim := got.(*gatewayv1.Gateway)
	if slim.ManagedFields != nil || slim.Labels != nil || slim.Spec.Addresses != nil {
		t.Errorf("Gateway kept fields the mapping does not read: %+v", slim)
	}
	// Programmed alone, type and status: a changed message or timestamp must not wake the sources.
	if want := []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionFalse}}; !reflect.DeepEqual(slim.Status.Conditions, want) {
		t.Errorf("Gateway conditions kept %+v, want %+v", slim.Status.Conditions, want)
	}
	if source.GatewayProgrammed(slim) != source.GatewayProgrammed(gw) {
		t.Errorf("GatewayProgrammed differs on the slim Gateway")
	}
	if slim.Spec.Listeners[1].TLS != nil {
		t.Errorf("listener TLS kept")
	}
	if _, ok := slim.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; ok || len(slim.Annotations) != 2 {
		t.Errorf("annotations = %v", slim.Annotations)
	}
	again, _ := s.Transform(slim)
	if !reflect.DeepEqual(again, slim) {
		t.Errorf("transform is not idempotent")
	}
	if !reflect.DeepEqual(cfg.GatewayRejections(gw), cfg.GatewayRejections(slim)) {
		t.Errorf("GatewayRejections differ on the slim Gateway")
	}

	gw.Status.Conditions[1].Status = metav1.ConditionTrue // the route below goes through a working Gateway
	route := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "web", ManagedFields: gw.ManagedFields,
			Labels:      map[string]string{"team": "web", "other": "x"},
			Annotations: map[string]string{source.LegacyAnnotationPrefix + source.HostnameAnnotation: "extra.example.com", "note": "x"}},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parentRef("infra", "gw", "")}},
			Hostnames:       hostnames("web.example.com"),
			Rules:           []gatewayv1.HTTPRouteRule{{Name: ptr(gatewayv1.SectionName("r"))}},
		},
		Status: gatewayv1.HTTPRouteStatus{RouteStatus: acceptedBy(parentRef("infra", "gw", ""))},
	}
	got, _ = s.Transform(route)
	slimRoute := got.(*gatewayv1.HTTPRoute)
	if slimRoute.Spec.Rules != nil || slimRoute.ManagedFields != nil || len(slimRoute.Labels) != 1 || len(slimRoute.Annotations) != 1 {
		t.Errorf("HTTPRoute kept fields the mapping does not read: %+v", slimRoute)
	}
	if c := slimRoute.Status.Parents[0].Conditions[0]; c.Message != "" || !c.LastTransitionTime.IsZero() {
		t.Errorf("condition kept %+v", c)
	}
	lookup := func(ns, name string) (*gatewayv1.Gateway, bool) { return gw, ns == "infra" && name == "gw" }
	full, _ := source.RouteOf(route)
	small, _ := source.RouteOf(slimRoute)
	c1, r1 := cfg.RouteClaims(full, lookup, nil)
	c2, r2 := cfg.RouteClaims(small, lookup, nil)
	if len(c1) == 0 || !reflect.DeepEqual(c1, c2) || !reflect.DeepEqual(r1, r2) {
		t.Errorf("mapping differs on the slim route:\n%v %v\n%v %v", c1, r1, c2, r2)
	}

	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "ing", ManagedFields: gw.ManagedFields},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr("nginx"),
			DefaultBackend:   &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "svc"}},
			Rules:            []networkingv1.IngressRule{{Host: "ing.example.com"}, {}},
			TLS:              []networkingv1.IngressTLS{{Hosts: []string{"tls.example.com"}, SecretName: "s"}},
		},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{
			Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.10", Ports: []networkingv1.IngressPortStatus{{Port: 80}}}},
		}},
	}
	got, _ = s.Transform(ing)
	slimIng := got.(*networkingv1.Ingress)
	if slimIng.Spec.DefaultBackend != nil || slimIng.Spec.TLS[0].SecretName != "" || slimIng.Status.LoadBalancer.Ingress[0].Ports != nil {
		t.Errorf("Ingress kept fields: %+v", slimIng)
	}
	ic1, ir1 := cfg.IngressClaims(ing)
	ic2, ir2 := cfg.IngressClaims(slimIng)
	if !reflect.DeepEqual(ic1, ic2) || !reflect.DeepEqual(ir1, ir2) {
		t.Errorf("mapping differs on the slim Ingress")
	}

	// Tombstones and other types pass through.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"x": "y"}}}
	got, _ = s.Transform(ns)
	if n := got.(*corev1.Namespace); n.Annotations != nil || n.Labels["a"] != "b" {
		t.Errorf("Namespace = %+v", n)
	}
	if got, _ := s.Transform("other"); got != "other" {
		t.Errorf("other types must pass unchanged")
	}
}

// resourceLists is a swappable discovery answer.
type resourceLists struct {
	v atomic.Pointer[map[string][]string]
}

func (r *resourceLists) set(gvs map[string][]string) { r.v.Store(&gvs) }

func (r *resourceLists) get(_ context.Context, gv string) (*metav1.APIResourceList, error) {
	names, ok := (*r.v.Load())[gv]
	if !ok {
		return kubefake.NewClientset().Discovery().ServerResourcesForGroupVersion(gv) // NotFound
	}
	list := &metav1.APIResourceList{GroupVersion: gv}
	for _, n := range names {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: n})
	}
	return list, nil
}

// TestWatcherWithFakeClients covers the wiring without an API server: discovery that finds a
// kind later, events for rejections (once), conflicts, deletes and a clean stop.
func TestWatcherWithFakeClients(t *testing.T) {
	before := goroutines()
	gw := newGateway("infra", "gw",
		listener("http", gatewayv1.HTTPProtocolType, 80, "*.example.com", gatewayv1.NamespacesFromAll, nil),
		listener("tls", gatewayv1.TLSProtocolType, 443, "*.example.com", gatewayv1.NamespacesFromAll, nil))
	gw.Status.Addresses = ipAddresses("192.0.2.1")
	pr := parentRef("infra", "gw", "")
	web := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "uid-web"},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{pr}},
			Hostnames: hostnames("web.example.com")},
		Status: gatewayv1.HTTPRouteStatus{RouteStatus: acceptedBy(pr)},
	}
	bad := web.DeepCopy()
	bad.Name, bad.UID = "bad", "uid-bad"
	bad.Spec.Hostnames = nil
	bad.Annotations = map[string]string{source.AnnotationPrefix + source.HostnameAnnotation: "bad_name.example.com,ok.example.com"}
	// NewSimpleClientset: NewClientset's field-managed tracker has no type information for
	// the Gateway API resources. The Gateway is created, not seeded: the tracker would guess
	// the resource of a seeded Gateway as "gatewaies".
	gwc := gwfake.NewSimpleClientset(web, bad) //nolint:staticcheck // see above
	if _, err := gwc.GatewayV1().Gateways("infra").Create(context.Background(), gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kube := kubefake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra"}},
	)
	var lists resourceLists
	lists.set(map[string][]string{"gateway.networking.k8s.io/v1": {"gateways", "httproutes", "httproutes/status"}})

	obs := newRecordingObserver()
	var changes changeLog
	w := NewForClients(kube, gwc, Options{Observer: obs, OnChange: changes.OnChange, DiscoveryInterval: 100 * time.Millisecond})
	w.resources = lists.get
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err == nil {
		t.Errorf("second Start: no error")
	}
	select {
	case <-w.SyncedC():
	case <-time.After(10 * time.Second):
		t.Fatal("not synced")
	}
	// Synced means the initial lists are mapped: no polling needed.
	if ok, state := endpointIs(w, "web.example.com", "192.0.2.1")(); !ok {
		t.Fatalf("at sync: %s", state)
	}
	if ok, state := endpointIs(w, "ok.example.com", "192.0.2.1")(); !ok {
		t.Fatalf("at sync: %s", state)
	}
	if changes.count("web.example.com") != 1 {
		t.Errorf("OnChange saw web.example.com %d times", changes.count("web.example.com"))
	}
	if h := obs.servedHistory(source.KindTLSRoute); len(h) != 1 || h[0] {
		t.Errorf("TLSRoute served history = %v, want [false]", h)
	}
	if h := obs.servedHistory(source.KindHTTPRoute); len(h) != 1 || !h[0] {
		t.Errorf("HTTPRoute served history = %v, want [true]", h)
	}

	eventually(t, 5*time.Second, "the InvalidHostname Event", func() (bool, string) {
		evs := warningEvents(t, kube, "apps", source.KindHTTPRoute, "bad", string(source.CauseInvalidHostname))
		if len(evs) != 1 {
			return false, "no event"
		}
		e := evs[0]
		ok := e.InvolvedObject.UID == "uid-bad" && e.InvolvedObject.APIVersion == "gateway.networking.k8s.io/v1" &&
			e.Message != "" && e.Source.Component == DefaultComponent
		return ok, e.String()
	})

	// A change that leaves the rejection as it was reports nothing again.
	bad2, _ := gwc.GatewayV1().HTTPRoutes("apps").Get(ctx, "bad", metav1.GetOptions{})
	bad2.Labels = map[string]string{"touched": "yes"}
	bad2.ResourceVersion = "2"
	if _, err := gwc.GatewayV1().HTTPRoutes("apps").Update(ctx, bad2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A CNAME conflict: a second route asks for web.example.com through a Gateway with a hostname target.
	gw2 := newGateway("infra", "gw2", listener("http", gatewayv1.HTTPProtocolType, 80, "", gatewayv1.NamespacesFromAll, nil))
	gw2.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Type: ptr(gatewayv1.HostnameAddressType), Value: "lb.example.net"}}
	if _, err := gwc.GatewayV1().Gateways("infra").Create(ctx, gw2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pr2 := parentRef("infra", "gw2", "")
	clash := web.DeepCopy()
	clash.Name, clash.UID = "clash", "uid-clash"
	clash.CreationTimestamp = metav1.NewTime(time.Now().Add(time.Hour))
	clash.Spec.ParentRefs = []gatewayv1.ParentReference{pr2}
	clash.Status.RouteStatus = acceptedBy(pr2)
	if _, err := gwc.GatewayV1().HTTPRoutes("apps").Create(ctx, clash, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the Conflict Event on the losing route", func() (bool, string) {
		n := len(warningEvents(t, kube, "apps", source.KindHTTPRoute, "clash", string(source.CauseConflict)))
		return n == 1, "none"
	})
	if n := obs.rejections(source.KindHTTPRoute, source.CauseInvalidHostname); n != 1 {
		t.Errorf("InvalidHostname counted %d times, want 1 (the update of bad must not report it again)", n)
	}
	if ok, state := endpointIs(w, "web.example.com", "192.0.2.1")(); !ok {
		t.Errorf("A record must win the conflict: %s", state)
	}

	// A kind that appears later is watched without a restart.
	tls := &gatewayv1.TLSRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "tls"},
		Spec: gatewayv1.TLSRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{pr}},
			Hostnames: hostnames("secure.example.com")},
		Status: gatewayv1.TLSRouteStatus{RouteStatus: acceptedBy(pr)},
	}
	if _, err := gwc.GatewayV1().TLSRoutes("apps").Create(ctx, tls, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lists.set(map[string][]string{"gateway.networking.k8s.io/v1": {"gateways", "httproutes", "tlsroutes"}})
	eventually(t, 5*time.Second, "the TLSRoute to publish", endpointIs(w, "secure.example.com", "192.0.2.1"))
	if h := obs.servedHistory(source.KindTLSRoute); len(h) != 2 || !h[1] {
		t.Errorf("TLSRoute served history = %v, want [false true]", h)
	}
	if got := w.Kinds()[source.KindTLSRoute]; got != "v1" {
		t.Errorf("TLSRoute watched at %q", got)
	}

	// A Gateway change recomputes the routes attached to it.
	gwNow, _ := gwc.GatewayV1().Gateways("infra").Get(ctx, "gw", metav1.GetOptions{})
	gwNow.Status.Addresses = ipAddresses("192.0.2.9")
	gwNow.ResourceVersion = "5"
	if _, err := gwc.GatewayV1().Gateways("infra").UpdateStatus(ctx, gwNow, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "web to follow the Gateway", endpointIs(w, "web.example.com", "192.0.2.9"))
	eventually(t, 5*time.Second, "tls to follow the Gateway", endpointIs(w, "secure.example.com", "192.0.2.9"))

	// Deletes.
	if err := gwc.GatewayV1().HTTPRoutes("apps").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "web to lose its A record to the CNAME", endpointIs(w, "web.example.com", "lb.example.net"))
	if err := gwc.GatewayV1().Gateways("infra").Delete(ctx, "gw2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "web to go with its Gateway", endpointIs(w, "web.example.com"))

	w.Stop()
	w.Stop()
	checkNoLeaks(t, before)
}

func TestRestConfig(t *testing.T) {
	if _, err := RestConfig("", "ctx"); err == nil {
		t.Errorf("a context without a kubeconfig must fail")
	}
	if _, err := RestConfig("/nonexistent/kubeconfig", ""); err == nil {
		t.Errorf("a missing kubeconfig must fail")
	}
}

func TestHandlerEnqueuesTombstonesAndSkipsNoops(t *testing.T) {
	w := NewForClients(kubefake.NewClientset(), gwfake.NewSimpleClientset(), Options{}) //nolint:staticcheck // see TestWatcherWithFakeClients
	defer w.queue.ShutDown()
	h := w.handler(source.KindHTTPRoute)

	r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", ResourceVersion: "1"}}
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "apps/gone", Obj: r})
	h.OnDelete(r)
	same := r.DeepCopy()
	same.ResourceVersion = "2" // e.g. a status condition that the transform dropped changed
	h.OnUpdate(r, same)
	h.OnUpdate(r, r) // a resync
	changed := same.DeepCopy()
	changed.ResourceVersion = "3"
	changed.Spec.Hostnames = hostnames("web.example.com")
	h.OnUpdate(same, changed)
	w.handler(KindNamespace).OnAdd(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, false)

	var got []string
	for w.queue.Len() > 0 {
		ref, _ := w.queue.Get()
		got = append(got, ref.String())
		w.queue.Done(ref)
	}
	want := []string{"HTTPRoute/apps/gone", "HTTPRoute/apps/web", "Namespace//apps"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("queued %v, want %v", got, want)
	}
}

// TestKindsLimitWhatIsWatched: the Corefile's "sources" starts only the informers asked for,
// even when the API server serves more.
func TestKindsLimitWhatIsWatched(t *testing.T) {
	var lists resourceLists
	lists.set(map[string][]string{"gateway.networking.k8s.io/v1": {"gateways", "httproutes", "tlsroutes", "grpcroutes"}})
	w := NewForClients(kubefake.NewClientset(), gwfake.NewSimpleClientset(), Options{Kinds: []string{source.KindTLSRoute}}) //nolint:staticcheck // see TestWatcherWithFakeClients
	w.resources = lists.get
	ctx, cancel := context.WithCancel(context.Background())
	defer w.Stop()
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.SyncedC():
	case <-time.After(10 * time.Second):
		t.Fatal("not synced")
	}
	got := w.Kinds()
	for _, want := range []string{source.KindGateway, source.KindTLSRoute, KindNamespace} {
		if _, ok := got[want]; !ok {
			t.Errorf("%s is not watched: %v", want, got)
		}
	}
	for _, unwanted := range []string{source.KindHTTPRoute, source.KindGRPCRoute, source.KindIngress} {
		if _, ok := got[unwanted]; ok {
			t.Errorf("%s is watched although not asked for: %v", unwanted, got)
		}
	}
}

// A Gateway keeps the labels that gateway-label-filter reads, and those alone.
func TestTransformKeepsTheGatewayLabelsTheFilterReads(t *testing.T) {
	sel, err := labels.Parse("dns in (public)")
	if err != nil {
		t.Fatal(err)
	}
	s := newSlimmer(&source.Config{GatewayLabelSelector: sel})
	gw := newGateway("infra", "gw", listener("http", gatewayv1.HTTPProtocolType, 80, "", gatewayv1.NamespacesFromAll, nil))
	gw.Labels = map[string]string{"dns": "public", "team": "web"}
	got, _ := s.Transform(gw)
	if slim := got.(*gatewayv1.Gateway); !reflect.DeepEqual(slim.Labels, map[string]string{"dns": "public"}) {
		t.Fatalf("labels kept %v, want dns alone", slim.Labels)
	}
}
