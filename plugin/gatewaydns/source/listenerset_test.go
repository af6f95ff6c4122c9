package source

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Fixtures: Gateway infra/gw (address 10.0.0.1, its own listener on *.gw.example.com, and
// allowedListeners from All) and ListenerSet app/ls attached to it, with the listener entries
// "a" (HTTP 80 *.a.example.com) and "b" (HTTPS 443 b.example.com), Accepted=True.

func lsRef(name string, mods ...func(*gatewayv1.ParentReference)) gatewayv1.ParentReference {
	return ref(name, append([]func(*gatewayv1.ParentReference){refKind(gatewayv1.GroupName, KindListenerSet)}, mods...)...)
}

func allowListeners(gw *gatewayv1.Gateway, from gatewayv1.FromNamespaces, sel *metav1.LabelSelector) *gatewayv1.Gateway {
	gw.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: &from, Selector: sel}}
	return gw
}

func lsGW() *gatewayv1.Gateway {
	return allowListeners(gateway("infra", "gw", []gatewayv1.Listener{listener("gw-http", HTTP, 80, "*.gw.example.com")}, "10.0.0.1"),
		gatewayv1.NamespacesFromAll, nil)
}

func lsEntry(l gatewayv1.Listener) gatewayv1.ListenerEntry { return gatewayv1.ListenerEntry(l) }

// listenerSet builds ListenerSet ns/name whose parentRef names Gateway gwNS/gwName, with the
// listener entries ls and the conditions Accepted and Programmed (status "" leaves one out).
func listenerSet(ns, name, gwNS, gwName string, acceptedStatus, programmedStatus metav1.ConditionStatus, ls ...gatewayv1.Listener) *gatewayv1.ListenerSet {
	out := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	out.Spec.ParentRef = gatewayv1.ParentGatewayReference{Name: gatewayv1.ObjectName(gwName)}
	if gwNS != ns {
		out.Spec.ParentRef.Namespace = ptr(gatewayv1.Namespace(gwNS))
	}
	for _, l := range ls {
		out.Spec.Listeners = append(out.Spec.Listeners, lsEntry(l))
	}
	if acceptedStatus != "" {
		out.Status.Conditions = append(out.Status.Conditions, metav1.Condition{Type: string(gatewayv1.ListenerSetConditionAccepted), Status: acceptedStatus})
	}
	if programmedStatus != "" {
		out.Status.Conditions = append(out.Status.Conditions, metav1.Condition{Type: string(gatewayv1.ListenerSetConditionProgrammed), Status: programmedStatus})
	}
	return out
}

func appLS() *gatewayv1.ListenerSet {
	return listenerSet("app", "ls", "infra", "gw", metav1.ConditionTrue, metav1.ConditionTrue,
		listener("a", HTTP, 80, "*.a.example.com"), listener("b", HTTPS, 443, "b.example.com"))
}

func lsLookup(sets []*gatewayv1.ListenerSet) ListenerSetLookup {
	return func(ns, name string) (*gatewayv1.ListenerSet, bool) {
		for _, ls := range sets {
			if ls.Namespace == ns && ls.Name == name {
				return ls, true
			}
		}
		return nil, false
	}
}

type lsCase struct {
	name     string
	cfg      Config
	gateways []*gatewayv1.Gateway
	sets     []*gatewayv1.ListenerSet
	ns       map[string]map[string]string
	route    Route
	want     []string // fmtClaims
	wantRej  []string // fmtRejections
}

func runLSCases(t *testing.T, cases []lsCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claims, rej := tc.cfg.RouteClaimsWithListenerSets(tc.route, lookup(tc.gateways), lsLookup(tc.sets), nsLookup(tc.ns))
			assertLines(t, "claims", fmtClaims(claims), tc.want)
			assertLines(t, "rejections", fmtRejections(rej), tc.wantRej)
		})
	}
}

func claimsAt(target string, names ...string) []string {
	var out []string
	for _, n := range names {
		out = append(out, n+" -> "+target+" ttl=0 from HTTPRoute/app/r")
	}
	return out
}

// TestRouteThroughListenerSet: a route whose parentRef names a ListenerSet attaches through the
// ListenerSet's listener entries to its parent Gateway, with the rules of a Gateway parent.
func TestRouteThroughListenerSet(t *testing.T) {
	gws := []*gatewayv1.Gateway{lsGW()}
	sets := []*gatewayv1.ListenerSet{appLS()}
	r := func(hosts []string, mods ...func(*gatewayv1.ParentReference)) Route {
		return route(KindHTTPRoute, hosts, lsRef("ls", mods...))
	}

	notAcceptedForLS := r([]string{"x.a.example.com"})
	notAcceptedForLS.Parents = []gatewayv1.RouteParentStatus{accepted(ref("ls"), metav1.ConditionTrue)} // a Gateway named ls
	acceptedOtherSection := r([]string{"x.a.example.com"}, section("a"))
	acceptedOtherSection.Parents = []gatewayv1.RouteParentStatus{accepted(lsRef("ls", section("b")), metav1.ConditionTrue)}
	routeFalse := r([]string{"x.a.example.com"})
	routeFalse.Parents[0] = accepted(lsRef("ls"), metav1.ConditionFalse)

	runLSCases(t, []lsCase{
		{name: "route attaches through the ListenerSet at the parent Gateway's address", gateways: gws, sets: sets,
			route: r([]string{"x.a.example.com"}), want: claimsAt("10.0.0.1", "x.a.example.com")},
		{name: "route without hostnames inherits the entries' hostnames, never the Gateway's own listeners'", gateways: gws, sets: sets,
			route: r(nil), want: claimsAt("10.0.0.1", "*.a.example.com", "b.example.com")},
		{name: "sectionName selects that listener entry", gateways: gws, sets: sets,
			route: r(nil, section("b")), want: claimsAt("10.0.0.1", "b.example.com")},
		{name: "sectionName naming a listener of the Gateway, not of the ListenerSet, matches nothing", gateways: gws, sets: sets,
			route: r(nil, section("gw-http")), wantRej: []string{"HTTPRoute/app/r - NoMatchingListener"}},
		{name: "port selects the entry on that port", gateways: gws, sets: sets,
			route: r(nil, port(443)), want: claimsAt("10.0.0.1", "b.example.com")},
		{name: "port that no entry has matches nothing", gateways: gws, sets: sets,
			route: r(nil, port(8080)), wantRej: []string{"HTTPRoute/app/r - NoMatchingListener"}},
		{name: "sectionName and port must both match", gateways: gws, sets: sets,
			route: r(nil, section("a"), port(443)), wantRej: []string{"HTTPRoute/app/r - NoMatchingListener"}},
		{name: "route status accepting a Gateway of the same name is not the ListenerSet reference", gateways: gws, sets: sets,
			route: notAcceptedForLS, wantRej: []string{"HTTPRoute/app/r - ParentNotAccepted"}},
		{name: "route status for another sectionName of the ListenerSet is another reference", gateways: gws, sets: sets,
			route: acceptedOtherSection, wantRej: []string{"HTTPRoute/app/r - ParentNotAccepted"}},
		{name: "route Accepted=False for the ListenerSet is not accepted", gateways: gws, sets: sets,
			route: routeFalse, wantRej: []string{"HTTPRoute/app/r - ParentNotAccepted"}},
		{name: "hostnames intersect with the entry hostname; the others are reported", gateways: gws, sets: sets,
			route:   r([]string{"*.example.com", "x.a.example.com", "y.gw.example.com"}, section("b")),
			want:    claimsAt("10.0.0.1", "b.example.com"),
			wantRej: []string{"HTTPRoute/app/r x.a.example.com NoMatchingHostname", "HTTPRoute/app/r y.gw.example.com NoMatchingHostname"}},
		{name: "protocol of the entry must accept the route kind", gateways: gws, sets: sets,
			route:   route(KindTLSRoute, []string{"b.example.com"}, lsRef("ls")),
			wantRej: []string{"TLSRoute/app/r - NoMatchingListener"}},
		{name: "parentRef namespace selects the ListenerSet's namespace", gateways: gws,
			sets:  []*gatewayv1.ListenerSet{listenerSet("infra", "ls", "infra", "gw", metav1.ConditionTrue, "", fromAll(listener("a", HTTP, 80, "*.a.example.com")))},
			route: r([]string{"x.a.example.com"}, refNS("infra")), want: claimsAt("10.0.0.1", "x.a.example.com")},
		{name: "route attached to the Gateway and to its ListenerSet publishes through both", gateways: gws, sets: sets,
			route: route(KindHTTPRoute, nil, lsRef("ls", section("b")), ref("gw", refNS("infra"), section("gw-http"))),
			// the Gateway's own listener admits only routes of its namespace: reported, b still published
			want: claimsAt("10.0.0.1", "b.example.com"), wantRej: []string{"HTTPRoute/app/r - NoMatchingListener"}},
	})
}

// TestListenerSetAllowedRoutes: allowedRoutes of a listener entry is relative to the
// ListenerSet's namespace, not to the Gateway's.
func TestListenerSetAllowedRoutes(t *testing.T) {
	gws := []*gatewayv1.Gateway{lsGW()}
	same := []*gatewayv1.ListenerSet{listenerSet("app", "ls", "infra", "gw", metav1.ConditionTrue, "", listener("a", HTTP, 80, "*.a.example.com"))}
	inInfra := []*gatewayv1.ListenerSet{listenerSet("infra", "ls", "infra", "gw", metav1.ConditionTrue, "", listener("a", HTTP, 80, "*.a.example.com"))}
	sel := listener("a", HTTP, 80, "*.a.example.com")
	sel.AllowedRoutes = &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{
		From: ptr(gatewayv1.NamespacesFromSelector), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}}
	bySelector := []*gatewayv1.ListenerSet{listenerSet("infra", "ls", "infra", "gw", metav1.ConditionTrue, "", sel)}
	onlyGRPC := listener("a", HTTP, 80, "*.a.example.com")
	onlyGRPC.AllowedRoutes = &gatewayv1.AllowedRoutes{Kinds: []gatewayv1.RouteGroupKind{{Kind: KindGRPCRoute}}}
	rInfra := route(KindHTTPRoute, []string{"x.a.example.com"}, lsRef("ls", refNS("infra")))

	runLSCases(t, []lsCase{
		{name: "Same admits a route in the ListenerSet's namespace though the Gateway is elsewhere", gateways: gws, sets: same,
			route: route(KindHTTPRoute, []string{"x.a.example.com"}, lsRef("ls")), want: claimsAt("10.0.0.1", "x.a.example.com")},
		{name: "Same rejects a route outside the ListenerSet's namespace, even in the Gateway's", gateways: gws, sets: inInfra,
			route: rInfra, wantRej: []string{"HTTPRoute/app/r - NoMatchingListener"}},
		{name: "Selector matches the route's namespace labels", gateways: gws, sets: bySelector, ns: map[string]map[string]string{"app": {"team": "a"}},
			route: rInfra, want: claimsAt("10.0.0.1", "x.a.example.com")},
		{name: "Selector not matching the route's namespace rejects it", gateways: gws, sets: bySelector, ns: map[string]map[string]string{"app": {"team": "b"}},
			route: rInfra, wantRej: []string{"HTTPRoute/app/r - NoMatchingListener"}},
		{name: "kinds not listing the route kind rejects it", gateways: gws,
			sets:  []*gatewayv1.ListenerSet{listenerSet("app", "ls", "infra", "gw", metav1.ConditionTrue, "", onlyGRPC)},
			route: route(KindHTTPRoute, []string{"x.a.example.com"}, lsRef("ls")), wantRej: []string{"HTTPRoute/app/r - NoMatchingListener"}},
	})
}

// TestListenerSetAttachment: a ListenerSet counts only when it exists, its Gateway exists, it
// is Accepted=True and the Gateway's allowedListeners admits its namespace.
func TestListenerSetAttachment(t *testing.T) {
	r := route(KindHTTPRoute, []string{"x.a.example.com"}, lsRef("ls"))
	ok := claimsAt("10.0.0.1", "x.a.example.com")
	notFound := []string{"HTTPRoute/app/r - ParentNotFound"}
	notAccepted := []string{"HTTPRoute/app/r - ParentNotAccepted"}
	l := listener("a", HTTP, 80, "*.a.example.com")
	withStatus := func(acc, prog metav1.ConditionStatus) []*gatewayv1.ListenerSet {
		return []*gatewayv1.ListenerSet{listenerSet("app", "ls", "infra", "gw", acc, prog, l)}
	}
	gwAllowing := func(from gatewayv1.FromNamespaces, sel *metav1.LabelSelector) []*gatewayv1.Gateway {
		return []*gatewayv1.Gateway{allowListeners(gateway("infra", "gw", nil, "10.0.0.1"), from, sel)}
	}
	team := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	notGW := listenerSet("app", "ls", "infra", "gw", metav1.ConditionTrue, "", l)
	notGW.Spec.ParentRef.Kind = ptr(gatewayv1.Kind("Service"))
	notGW.Spec.ParentRef.Group = ptr(gatewayv1.Group(""))
	sameNS := listenerSet("app", "ls", "app", "gw", metav1.ConditionTrue, "", l)

	runLSCases(t, []lsCase{
		{name: "missing ListenerSet is reported", gateways: []*gatewayv1.Gateway{lsGW()}, route: r, wantRej: notFound},
		{name: "missing parent Gateway of the ListenerSet is reported", sets: withStatus(metav1.ConditionTrue, ""), route: r, wantRej: notFound},
		{name: "ListenerSet whose parentRef is not a Gateway is reported", gateways: []*gatewayv1.Gateway{lsGW()}, sets: []*gatewayv1.ListenerSet{notGW}, route: r, wantRej: notFound},
		{name: "ListenerSet Accepted=False is not attached", gateways: []*gatewayv1.Gateway{lsGW()}, sets: withStatus(metav1.ConditionFalse, ""), route: r, wantRej: notAccepted},
		{name: "ListenerSet Accepted=Unknown (the CRD's Pending default) is not attached", gateways: []*gatewayv1.Gateway{lsGW()}, sets: withStatus(metav1.ConditionUnknown, metav1.ConditionUnknown), route: r, wantRej: notAccepted},
		{name: "ListenerSet without status is not attached", gateways: []*gatewayv1.Gateway{lsGW()}, sets: withStatus("", ""), route: r, wantRej: notAccepted},
		{name: "ListenerSet Programmed=False withdraws its names", gateways: []*gatewayv1.Gateway{lsGW()}, sets: withStatus(metav1.ConditionTrue, metav1.ConditionFalse), route: r,
			wantRej: []string{"HTTPRoute/app/r - NotProgrammed"}},
		{name: "Gateway without allowedListeners (None) does not allow it, whatever its status says", gateways: []*gatewayv1.Gateway{gateway("infra", "gw", nil, "10.0.0.1")},
			sets: withStatus(metav1.ConditionTrue, ""), route: r, wantRej: notAccepted},
		{name: "allowedListeners None", gateways: gwAllowing(gatewayv1.NamespacesFromNone, nil), sets: withStatus(metav1.ConditionTrue, ""), route: r, wantRej: notAccepted},
		{name: "allowedListeners Same rejects a ListenerSet of another namespace", gateways: gwAllowing(gatewayv1.NamespacesFromSame, nil), sets: withStatus(metav1.ConditionTrue, ""), route: r, wantRej: notAccepted},
		{name: "allowedListeners Same admits a ListenerSet of the Gateway's namespace",
			gateways: []*gatewayv1.Gateway{allowListeners(gateway("app", "gw", nil, "10.0.0.1"), gatewayv1.NamespacesFromSame, nil)},
			sets:     []*gatewayv1.ListenerSet{sameNS}, route: r, want: ok},
		{name: "allowedListeners Selector matching the ListenerSet's namespace", gateways: gwAllowing(gatewayv1.NamespacesFromSelector, team),
			ns: map[string]map[string]string{"app": {"team": "a"}}, sets: withStatus(metav1.ConditionTrue, ""), route: r, want: ok},
		{name: "allowedListeners Selector not matching the ListenerSet's namespace", gateways: gwAllowing(gatewayv1.NamespacesFromSelector, team),
			ns: map[string]map[string]string{"app": {"team": "b"}}, sets: withStatus(metav1.ConditionTrue, ""), route: r, wantRej: notAccepted},
		{name: "allowedListeners Selector with the namespace's labels unknown trusts Accepted=True", gateways: gwAllowing(gatewayv1.NamespacesFromSelector, team),
			sets: withStatus(metav1.ConditionTrue, ""), route: r, want: ok},
		{name: "no lookup of ListenerSets: reported as not found", gateways: []*gatewayv1.Gateway{lsGW()}, route: r, wantRej: notFound},
	})

	// RouteClaims (without ListenerSets) reports such a parent as not found.
	claims, rej := (&Config{}).RouteClaims(r, lookup([]*gatewayv1.Gateway{lsGW()}), nil)
	assertLines(t, "RouteClaims claims", fmtClaims(claims), nil)
	assertLines(t, "RouteClaims rejections", fmtRejections(rej), notFound)
}

// TestListenerSetThroughGatewayFilters: targets, Gateway filters, Programmed and the base
// domain all come from the ListenerSet's parent Gateway.
func TestListenerSetThroughGatewayFilters(t *testing.T) {
	sets := []*gatewayv1.ListenerSet{appLS()}
	r := route(KindHTTPRoute, []string{"x.a.example.com"}, lsRef("ls"))
	ok := claimsAt("10.0.0.1", "x.a.example.com")
	programmed := func(s metav1.ConditionStatus) []*gatewayv1.Gateway {
		gw := lsGW()
		gw.Status.Conditions = []metav1.Condition{{Type: string(gatewayv1.GatewayConditionProgrammed), Status: s}}
		return []*gatewayv1.Gateway{gw}
	}
	hostnameGW := lsGW()
	hostnameGW.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Type: ptr(gatewayv1.HostnameAddressType), Value: "lb.example.net"}}
	based := gwAnnotate(lsGW(), BaseDomainAnnotation, "a.example.com")
	otherBase := gwAnnotate(lsGW(), BaseDomainAnnotation, "c2.example.com")

	runLSCases(t, []lsCase{
		{name: "Gateway Hostname address is the CNAME target", gateways: []*gatewayv1.Gateway{hostnameGW}, sets: sets, route: r,
			want: claimsAt("lb.example.net", "x.a.example.com")},
		{name: "Gateway target annotation overrides its addresses", gateways: []*gatewayv1.Gateway{gwAnnotate(lsGW(), AnnotationPrefix+"target", "192.0.2.7")}, sets: sets, route: r,
			want: claimsAt("192.0.2.7", "x.a.example.com")},
		{name: "Gateway without addresses yields no name", gateways: []*gatewayv1.Gateway{allowListeners(gateway("infra", "gw", nil), gatewayv1.NamespacesFromAll, nil)}, sets: sets,
			route: r, wantRej: []string{"HTTPRoute/app/r - NoTargets"}},
		{name: "GatewayClass filter admits the parent Gateway's class", cfg: Config{GatewayClasses: []string{"cls"}}, gateways: []*gatewayv1.Gateway{lsGW()}, sets: sets, route: r, want: ok},
		{name: "GatewayClass filter leaves out the parent Gateway silently", cfg: Config{GatewayClasses: []string{"other"}}, gateways: []*gatewayv1.Gateway{lsGW()}, sets: sets, route: r},
		{name: "gateway-name filter applies to the parent Gateway", cfg: Config{GatewayName: "other"}, gateways: []*gatewayv1.Gateway{lsGW()}, sets: sets, route: r},
		{name: "gateway-namespace filter applies to the parent Gateway, not the ListenerSet", cfg: Config{GatewayNamespace: "infra"}, gateways: []*gatewayv1.Gateway{lsGW()}, sets: sets, route: r, want: ok},
		{name: "gateway-label-filter applies to the parent Gateway", cfg: Config{GatewayLabelSelector: mustSelector("env=prod")}, gateways: []*gatewayv1.Gateway{lsGW()}, sets: sets, route: r},
		{name: "parent Gateway Programmed=False withdraws the names", gateways: programmed(metav1.ConditionFalse), sets: sets, route: r,
			wantRej: []string{"HTTPRoute/app/r - NotProgrammed"}},
		{name: "parent Gateway Programmed=True publishes", gateways: programmed(metav1.ConditionTrue), sets: sets, route: r, want: ok},
		{name: "base domain of the parent Gateway admits names under it", cfg: Config{BaseDomainFromGateway: true}, gateways: []*gatewayv1.Gateway{based}, sets: sets, route: r, want: ok},
		{name: "base domain of the parent Gateway rejects names outside it", cfg: Config{BaseDomainFromGateway: true}, gateways: []*gatewayv1.Gateway{otherBase}, sets: sets, route: r,
			wantRej: []string{"HTTPRoute/app/r x.a.example.com BaseDomain"}},
		{name: "domain filter applies", cfg: Config{DomainFilter: NewDomainFilter([]string{"other.com"}, nil), Zones: NewDomainFilter([]string{"example.com"}, nil)},
			gateways: []*gatewayv1.Gateway{lsGW()}, sets: sets, route: r, wantRej: []string{"HTTPRoute/app/r x.a.example.com DomainFilter"}},
	})
}

func TestParentListenerSetKeys(t *testing.T) {
	hr := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "r"}}
	hr.Spec.ParentRefs = []gatewayv1.ParentReference{
		lsRef("ls", section("a")), lsRef("ls", section("b")), lsRef("ls2", refNS("infra")), ref("gw"),
		ref("ls3", refKind("example.com", KindListenerSet)),
	}
	keys, err := ParentListenerSetKeys(hr)
	if want := []string{"app/ls", "infra/ls2"}; err != nil || !slices.Equal(keys, want) {
		t.Errorf("ParentListenerSetKeys = %q, %v; want %q", keys, err, want)
	}
	if keys, _ := ParentGatewayKeys(hr); !slices.Equal(keys, []string{"app/gw"}) {
		t.Errorf("ParentGatewayKeys = %q; want only the Gateway", keys)
	}
	if keys, err := ParentListenerSetKeys(&gatewayv1.Gateway{}); keys != nil || err != nil {
		t.Errorf("ParentListenerSetKeys(Gateway) = %q, %v", keys, err)
	}

	if keys, err := ListenerSetGatewayKeys(appLS()); err != nil || !slices.Equal(keys, []string{"infra/gw"}) {
		t.Errorf("ListenerSetGatewayKeys = %q, %v", keys, err)
	}
	local := listenerSet("app", "ls", "app", "gw", "", "")
	if keys, _ := ListenerSetGatewayKeys(local); !slices.Equal(keys, []string{"app/gw"}) {
		t.Errorf("ListenerSetGatewayKeys(namespace defaulted) = %q", keys)
	}
	if keys, err := ListenerSetGatewayKeys(hr); keys != nil || err != nil {
		t.Errorf("ListenerSetGatewayKeys(HTTPRoute) = %q, %v", keys, err)
	}
}

// TestListenerSetTargetAnnotation: a target annotation on the ListenerSet overrides the parent
// Gateway's addresses and target annotation for the routes attached through it, as external-dns
// (--gateway-listener-sets) reads it; routes attached to the Gateway itself keep the Gateway's.
func TestListenerSetTargetAnnotation(t *testing.T) {
	annotatedLS := func(kv ...string) []*gatewayv1.ListenerSet {
		ls := appLS()
		ls.Annotations = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			ls.Annotations[kv[i]] = kv[i+1]
		}
		return []*gatewayv1.ListenerSet{ls}
	}
	gwTarget := []*gatewayv1.Gateway{gwAnnotate(lsGW(), AnnotationPrefix+TargetAnnotation, "192.0.2.50")}
	viaLS := route(KindHTTPRoute, []string{"x.a.example.com"}, lsRef("ls"))
	viaGW := route(KindHTTPRoute, []string{"x.gw.example.com"}, ref("gw", refNS("infra")))
	runLSCases(t, []lsCase{
		{name: "the ListenerSet's target annotation overrides the Gateway's addresses", gateways: []*gatewayv1.Gateway{lsGW()},
			sets: annotatedLS(AnnotationPrefix+TargetAnnotation, "192.0.2.7, lb.example.net"), route: viaLS,
			want: claimsAt("192.0.2.7,lb.example.net", "x.a.example.com")},
		{name: "the legacy prefix is read on a ListenerSet too", gateways: []*gatewayv1.Gateway{lsGW()},
			sets: annotatedLS(LegacyAnnotationPrefix+TargetAnnotation, "192.0.2.7"), route: viaLS, want: claimsAt("192.0.2.7", "x.a.example.com")},
		{name: "the ListenerSet's target annotation overrides the Gateway's target annotation", gateways: gwTarget,
			sets: annotatedLS(AnnotationPrefix+TargetAnnotation, "192.0.2.7"), route: viaLS, want: claimsAt("192.0.2.7", "x.a.example.com")},
		{name: "without one, the Gateway's target annotation counts", gateways: gwTarget,
			sets: annotatedLS(), route: viaLS, want: claimsAt("192.0.2.50", "x.a.example.com")},
		{name: "an empty target annotation on the ListenerSet overrides nothing", gateways: []*gatewayv1.Gateway{lsGW()},
			sets: annotatedLS(AnnotationPrefix+TargetAnnotation, " "), route: viaLS, want: claimsAt("10.0.0.1", "x.a.example.com")},
		{name: "a route attached to the Gateway itself keeps the Gateway's addresses", gateways: []*gatewayv1.Gateway{allowListeners(
			gateway("infra", "gw", []gatewayv1.Listener{fromAll(listener("gw-http", HTTP, 80, "*.gw.example.com"))}, "10.0.0.1"), gatewayv1.NamespacesFromAll, nil)},
			sets: annotatedLS(AnnotationPrefix+TargetAnnotation, "192.0.2.7"), route: viaGW, want: []string{"x.gw.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"}},
		{name: "unusable entries of the ListenerSet's target annotation are reported on the route and left out", gateways: []*gatewayv1.Gateway{lsGW()},
			sets: annotatedLS(AnnotationPrefix+TargetAnnotation, "192.0.2.7,bad_target"), route: viaLS,
			want: claimsAt("192.0.2.7", "x.a.example.com"), wantRej: []string{"HTTPRoute/app/r - InvalidTarget"}},
	})
}
