package kubesource

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// listenerSetRef is a route's parentRef to ListenerSet namespace/name, sectionName section.
func listenerSetRef(namespace, name, section string) gatewayv1.ParentReference {
	p := parentRef(namespace, name, section)
	p.Group = ptr(gatewayv1.Group(gatewayv1.GroupName))
	p.Kind = ptr(gatewayv1.Kind(source.KindListenerSet))
	return p
}

// listenerSet creates ListenerSet namespace/name on Gateway gwNamespace/gwName with one HTTP
// listener entry "web" on hostname, and sets its Accepted condition as the Gateway's
// controller would.
func (c *cluster) listenerSet(namespace, name, gwNamespace, gwName, hostname string) {
	c.t.Helper()
	ls := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	ls.Spec.ParentRef = gatewayv1.ParentGatewayReference{Name: gatewayv1.ObjectName(gwName), Namespace: ptr(gatewayv1.Namespace(gwNamespace))}
	ls.Spec.Listeners = []gatewayv1.ListenerEntry{{
		Name: "web", Protocol: gatewayv1.HTTPProtocolType, Port: 80, Hostname: ptr(gatewayv1.Hostname(hostname)),
	}}
	_, err := c.gw.GatewayV1().ListenerSets(namespace).Create(c.ctx, ls, metav1.CreateOptions{})
	c.must(err)
	c.listenerSetAccepted(namespace, name, metav1.ConditionTrue)
}

func (c *cluster) listenerSetAccepted(namespace, name string, status metav1.ConditionStatus) {
	c.t.Helper()
	ls, err := c.gw.GatewayV1().ListenerSets(namespace).Get(c.ctx, name, metav1.GetOptions{})
	c.must(err)
	reason := gatewayv1.ListenerSetReasonAccepted
	if status != metav1.ConditionTrue {
		reason = gatewayv1.ListenerSetReasonNotAllowed
	}
	ls.Status.Conditions = []metav1.Condition{{
		Type: string(gatewayv1.ListenerSetConditionAccepted), Status: status, Reason: string(reason),
		Message: "set by the test", LastTransitionTime: metav1.Now(),
	}}
	_, err = c.gw.GatewayV1().ListenerSets(namespace).UpdateStatus(c.ctx, ls, metav1.UpdateOptions{})
	c.must(err)
}

// setAnnotation sets annotation key of m to value ("" removes it).
func setAnnotation(m *metav1.ObjectMeta, key, value string) {
	if value == "" {
		delete(m.Annotations, key)
		return
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[key] = value
}

// setListenerSetAnnotation sets annotation key of a ListenerSet to value ("" removes it).
func (c *cluster) setListenerSetAnnotation(namespace, name, key, value string) {
	c.t.Helper()
	ls, err := c.gw.GatewayV1().ListenerSets(namespace).Get(c.ctx, name, metav1.GetOptions{})
	c.must(err)
	setAnnotation(&ls.ObjectMeta, key, value)
	_, err = c.gw.GatewayV1().ListenerSets(namespace).Update(c.ctx, ls, metav1.UpdateOptions{})
	c.must(err)
}

func (c *cluster) setListenerSetHostname(namespace, name, hostname string) {
	c.t.Helper()
	ls, err := c.gw.GatewayV1().ListenerSets(namespace).Get(c.ctx, name, metav1.GetOptions{})
	c.must(err)
	ls.Spec.Listeners[0].Hostname = ptr(gatewayv1.Hostname(hostname))
	_, err = c.gw.GatewayV1().ListenerSets(namespace).Update(c.ctx, ls, metav1.UpdateOptions{})
	c.must(err)
}

func (c *cluster) setAllowedListeners(namespace, name string, from gatewayv1.FromNamespaces) {
	c.t.Helper()
	gw, err := c.gw.GatewayV1().Gateways(namespace).Get(c.ctx, name, metav1.GetOptions{})
	c.must(err)
	gw.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: ptr(from)}}
	_, err = c.gw.GatewayV1().Gateways(namespace).Update(c.ctx, gw, metav1.UpdateOptions{})
	c.must(err)
}

// TestIntegrationListenerSet: on a real kube-apiserver with the standard CRDs, routes attached
// to a ListenerSet publish at its parent Gateway's address, and follow the ListenerSet's
// listener hostname, the Gateway's address, the ListenerSet's Accepted condition and the
// Gateway's allowedListeners; deleting the ListenerSet removes the names and reports
// ParentNotFound on the route.
func TestIntegrationListenerSet(t *testing.T) {
	c := startCluster(t)
	c.namespace("infra", nil)
	c.namespace("team-a", nil)
	c.gatewayClass()
	gw := newGateway("infra", "gw", listener("http", gatewayv1.HTTPProtocolType, 80, "*.gw.example.com", gatewayv1.NamespacesFromAll, nil))
	gw.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: ptr(gatewayv1.NamespacesFromAll)}}
	c.gateway(gw, "192.0.2.1")
	c.listenerSet("team-a", "ls", "infra", "gw", "*.a.example.com")
	ls := listenerSetRef("team-a", "ls", "web")
	// web exists before the watcher starts (the initial list); all (no hostnames: it inherits
	// the listener entry's) comes after.
	c.httpRoute("team-a", "web", []string{"web.a.example.com"}, nil, ls)

	w := c.watch(source.Config{}, newRecordingObserver())
	waitSynced(t, w)
	if ok, state := endpointIs(w, "web.a.example.com", "192.0.2.1")(); !ok {
		t.Fatalf("at sync: %s", state)
	}
	if v := w.Kinds()[source.KindListenerSet]; v != "v1" {
		t.Errorf("ListenerSet watched at %q, want v1", v)
	}
	c.httpRoute("team-a", "all", nil, nil, listenerSetRef("team-a", "ls", ""))
	eventually(t, waitFor, "all inherits the listener entry's hostname", endpointIs(w, "*.a.example.com", "192.0.2.1"))
	if ok, state := endpointIs(w, "*.gw.example.com")(); !ok {
		t.Errorf("a route attached to the ListenerSet got the Gateway's own listener: %s", state)
	}

	// The ListenerSet's listener hostname changes: the inherited name follows, web no longer
	// intersects it.
	step := time.Now()
	c.setListenerSetHostname("team-a", "ls", "*.b.example.com")
	eventually(t, waitFor, "the new listener hostname", endpointIs(w, "*.b.example.com", "192.0.2.1"))
	eventually(t, waitFor, "the old listener hostname gone", endpointIs(w, "*.a.example.com"))
	eventually(t, waitFor, "web no longer intersects the listener", endpointIs(w, "web.a.example.com"))
	t.Logf("ListenerSet hostname change followed in %v", time.Since(step).Round(time.Millisecond))
	c.setListenerSetHostname("team-a", "ls", "*.a.example.com")
	eventually(t, waitFor, "web back", endpointIs(w, "web.a.example.com", "192.0.2.1"))

	// The parent Gateway's address changes: the routes attached through its ListenerSet follow.
	step = time.Now()
	c.gatewayAddresses("infra", "gw", "192.0.2.9")
	eventually(t, waitFor, "web after the Gateway address change", endpointIs(w, "web.a.example.com", "192.0.2.9"))
	eventually(t, waitFor, "all after the Gateway address change", endpointIs(w, "*.a.example.com", "192.0.2.9"))
	t.Logf("Gateway address change followed through the ListenerSet in %v", time.Since(step).Round(time.Millisecond))

	// The ListenerSet is no longer Accepted, then again.
	c.listenerSetAccepted("team-a", "ls", metav1.ConditionFalse)
	eventually(t, waitFor, "web gone with Accepted=False", endpointIs(w, "web.a.example.com"))
	c.listenerSetAccepted("team-a", "ls", metav1.ConditionTrue)
	eventually(t, waitFor, "web back with Accepted=True", endpointIs(w, "web.a.example.com", "192.0.2.9"))

	// The Gateway's owner narrows allowedListeners to its own namespace: withdrawn before any
	// controller updates the ListenerSet's status.
	c.setAllowedListeners("infra", "gw", gatewayv1.NamespacesFromSame)
	eventually(t, waitFor, "web gone with allowedListeners Same", endpointIs(w, "web.a.example.com"))
	c.setAllowedListeners("infra", "gw", gatewayv1.NamespacesFromAll)
	eventually(t, waitFor, "web back with allowedListeners All", endpointIs(w, "web.a.example.com", "192.0.2.9"))

	// A target annotation on the ListenerSet overrides the Gateway's address for its routes,
	// as external-dns reads it; removed, the Gateway's address is back.
	c.setListenerSetAnnotation("team-a", "ls", source.AnnotationPrefix+source.TargetAnnotation, "192.0.2.77")
	eventually(t, waitFor, "web at the ListenerSet's target", endpointIs(w, "web.a.example.com", "192.0.2.77"))
	c.setListenerSetAnnotation("team-a", "ls", source.AnnotationPrefix+source.TargetAnnotation, "")
	eventually(t, waitFor, "web back at the Gateway's address", endpointIs(w, "web.a.example.com", "192.0.2.9"))

	// The ListenerSet is deleted: its routes' names go, and the routes say why.
	c.must(c.gw.GatewayV1().ListenerSets("team-a").Delete(c.ctx, "ls", metav1.DeleteOptions{}))
	eventually(t, waitFor, "web gone with the ListenerSet", endpointIs(w, "web.a.example.com"))
	eventually(t, waitFor, "all gone with the ListenerSet", endpointIs(w, "*.a.example.com"))
	eventually(t, waitFor, "the ParentNotFound Event on HTTPRoute web", func() (bool, string) {
		return len(warningEvents(t, c.kube, "team-a", source.KindHTTPRoute, "web", string(source.CauseParentNotFound))) == 1, "ParentNotFound Events"
	})
	if n := len(w.Desired().Endpoints()); n != 0 {
		t.Errorf("%d endpoints left", n)
	}
}

// TestIntegrationListenerSetCRDLater: without the ListenerSet CRD the watcher syncs and a route
// attached to a ListenerSet is only reported; once the CRD is installed, the ListenerSet is
// watched without a restart and the route publishes.
func TestIntegrationListenerSetCRDLater(t *testing.T) {
	c := startCluster(t, testenv.WithoutCRDs(source.KindListenerSet))
	c.namespace("apps", nil)
	c.gatewayClass()
	gw := newGateway("apps", "gw", listener("http", gatewayv1.HTTPProtocolType, 80, "", gatewayv1.NamespacesFromSame, nil))
	gw.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: ptr(gatewayv1.NamespacesFromSame)}}
	c.gateway(gw, "192.0.2.1")
	c.httpRoute("apps", "web", []string{"web.example.com"}, nil, listenerSetRef("apps", "ls", ""))

	obs := newRecordingObserver()
	w := c.watch(source.Config{}, obs)
	waitSynced(t, w)
	if h := obs.servedHistory(source.KindListenerSet); len(h) != 1 || h[0] {
		t.Errorf("ListenerSet served history %v, want [false]", h)
	}
	eventually(t, waitFor, "the ParentNotFound Event on HTTPRoute web", func() (bool, string) {
		return len(warningEvents(t, c.kube, "apps", source.KindHTTPRoute, "web", string(source.CauseParentNotFound))) == 1, "ParentNotFound Events"
	})

	step := time.Now()
	c.env.InstallCRD(t, source.KindListenerSet)
	c.listenerSet("apps", "ls", "apps", "gw", "*.example.com")
	eventually(t, waitFor, "web through the ListenerSet installed later", endpointIs(w, "web.example.com", "192.0.2.1"))
	t.Logf("ListenerSet CRD picked up and published %v after install", time.Since(step).Round(time.Millisecond))
	if h := obs.servedHistory(source.KindListenerSet); len(h) != 2 || !h[1] {
		t.Errorf("ListenerSet served history %v, want [false true]", h)
	}
}

// TestIntegrationListenerSetSelector: a Gateway admits ListenerSets by a namespace selector;
// relabelling the ListenerSet's namespace, which holds no route, withdraws and restores the
// names of the routes (in another namespace) attached through it.
func TestIntegrationListenerSetSelector(t *testing.T) {
	c := startCluster(t)
	c.namespace("infra", nil)
	c.namespace("tenant", map[string]string{"listeners": "yes"})
	c.namespace("apps", nil)
	c.gatewayClass()
	gw := newGateway("infra", "gw", listener("http", gatewayv1.HTTPProtocolType, 80, "", gatewayv1.NamespacesFromSame, nil))
	gw.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{
		From: ptr(gatewayv1.NamespacesFromSelector), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"listeners": "yes"}}}}
	c.gateway(gw, "192.0.2.1")
	ls := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "ls"}}
	ls.Spec.ParentRef = gatewayv1.ParentGatewayReference{Name: "gw", Namespace: ptr(gatewayv1.Namespace("infra"))}
	entry := gatewayv1.ListenerEntry(listener("web", gatewayv1.HTTPProtocolType, 80, "*.tenant.example.com", gatewayv1.NamespacesFromAll, nil))
	ls.Spec.Listeners = []gatewayv1.ListenerEntry{entry}
	_, err := c.gw.GatewayV1().ListenerSets("tenant").Create(c.ctx, ls, metav1.CreateOptions{})
	c.must(err)
	c.listenerSetAccepted("tenant", "ls", metav1.ConditionTrue)
	c.httpRoute("apps", "web", []string{"web.tenant.example.com"}, nil, listenerSetRef("tenant", "ls", "web"))

	w := c.watch(source.Config{}, newRecordingObserver())
	waitSynced(t, w)
	eventually(t, waitFor, "web through the ListenerSet of a selected namespace", endpointIs(w, "web.tenant.example.com", "192.0.2.1"))
	c.setNamespaceLabels("tenant", nil)
	eventually(t, waitFor, "web gone when the ListenerSet's namespace leaves the selector", endpointIs(w, "web.tenant.example.com"))
	c.setNamespaceLabels("tenant", map[string]string{"listeners": "yes"})
	eventually(t, waitFor, "web back", endpointIs(w, "web.tenant.example.com", "192.0.2.1"))
}

// TestIntegrationListenerSetNamespacedRBAC: with the namespaces and gateway-namespace options
// and only the namespaced Roles that deploy/ ships, ListenerSets are read in those namespaces:
// a route attached through a ListenerSet of the gateway-namespace publishes; one attached
// through a ListenerSet of another namespace is reported ParentNotFound (it is not read).
func TestIntegrationListenerSetNamespacedRBAC(t *testing.T) {
	c := startCluster(t)
	for _, ns := range []string{"infra", "team-a", "team-b"} {
		c.namespace(ns, nil)
	}
	c.gatewayClass()
	gw := newGateway("infra", "gw", listener("http", gatewayv1.HTTPProtocolType, 80, "", gatewayv1.NamespacesFromSame, nil))
	gw.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: ptr(gatewayv1.NamespacesFromAll)}}
	c.gateway(gw, "192.0.2.1")
	for _, ns := range []string{"infra", "team-b"} {
		ls := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ls"}}
		ls.Spec.ParentRef = gatewayv1.ParentGatewayReference{Name: "gw", Namespace: ptr(gatewayv1.Namespace("infra"))}
		ls.Spec.Listeners = []gatewayv1.ListenerEntry{gatewayv1.ListenerEntry(listener("web", gatewayv1.HTTPProtocolType, 80, "*.example.com", gatewayv1.NamespacesFromAll, nil))}
		_, err := c.gw.GatewayV1().ListenerSets(ns).Create(c.ctx, ls, metav1.CreateOptions{})
		c.must(err)
		c.listenerSetAccepted(ns, "ls", metav1.ConditionTrue)
	}
	c.httpRoute("team-a", "web", []string{"web.example.com"}, nil, listenerSetRef("infra", "ls", ""))
	c.httpRoute("team-a", "far", []string{"far.example.com"}, nil, listenerSetRef("team-b", "ls", ""))

	c.applyRBAC(shippedNamespacedRBAC)
	sa := c.env.UserConfig(t, "system:serviceaccount:kube-system:coredns", "system:serviceaccounts", "system:serviceaccounts:kube-system")
	cfg := source.Config{Namespaces: []string{"team-a"}, GatewayNamespace: "infra"}
	w := c.watchAs(sa, cfg, nil, source.KindHTTPRoute)
	waitSynced(t, w)
	if ok, state := endpointIs(w, "web.example.com", "192.0.2.1")(); !ok {
		t.Fatalf("at sync: %s", state)
	}
	if ok, state := endpointIs(w, "far.example.com")(); !ok {
		t.Errorf("published through a ListenerSet outside the namespaces read: %s", state)
	}
	eventually(t, waitFor, "the ParentNotFound Event on HTTPRoute far", func() (bool, string) {
		return len(warningEvents(t, c.kube, "team-a", source.KindHTTPRoute, "far", string(source.CauseParentNotFound))) == 1, "ParentNotFound Events"
	})
}
