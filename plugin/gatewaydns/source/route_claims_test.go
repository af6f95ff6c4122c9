package source

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

const (
	HTTP  = gatewayv1.HTTPProtocolType
	HTTPS = gatewayv1.HTTPSProtocolType
	TLS   = gatewayv1.TLSProtocolType
	TCP   = gatewayv1.TCPProtocolType
	UDP   = gatewayv1.UDPProtocolType
)

// appsGW is Gateway app/gw with one HTTP listener on *.apps.example.com and address 10.0.0.1.
func appsGW() *gatewayv1.Gateway {
	return gateway("app", "gw", []gatewayv1.Listener{listener("http", HTTP, 80, "*.apps.example.com")}, "10.0.0.1")
}

// oneListenerGW is Gateway app/gw with the single listener l and address 10.0.0.1.
func oneListenerGW(l gatewayv1.Listener) *gatewayv1.Gateway {
	return gateway("app", "gw", []gatewayv1.Listener{l}, "10.0.0.1")
}

// gwLabels is gw with the labels kv (key, value, ...).
func gwLabels(gw *gatewayv1.Gateway, kv ...string) *gatewayv1.Gateway {
	gw.Labels = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		gw.Labels[kv[i]] = kv[i+1]
	}
	return gw
}

func mustSelector(s string) labels.Selector {
	sel, err := labels.Parse(s)
	if err != nil {
		panic(err)
	}
	return sel
}

type routeCase struct {
	name     string
	cfg      Config
	gateways []*gatewayv1.Gateway
	ns       map[string]map[string]string
	route    Route
	want     []string // fmtClaims
	wantRej  []string // fmtRejections
}

func runRouteCases(t *testing.T, cases []routeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claims, rej := tc.cfg.RouteClaims(tc.route, lookup(tc.gateways), nsLookup(tc.ns))
			assertLines(t, "claims", fmtClaims(claims), tc.want)
			assertLines(t, "rejections", fmtRejections(rej), tc.wantRej)
		})
	}
}

func TestRouteParents(t *testing.T) {
	otherGW := gateway("app", "other", []gatewayv1.Listener{listener("http", HTTP, 80, "")}, "10.0.0.9")
	notAccepted := route(KindHTTPRoute, []string{"a.apps.example.com"}, ref("gw"))
	notAccepted.Parents[0] = accepted(ref("gw"), metav1.ConditionFalse)
	noStatus := route(KindHTTPRoute, []string{"a.apps.example.com"}, ref("gw"))
	noStatus.Parents = nil
	statusForOther := route(KindHTTPRoute, []string{"a.apps.example.com"}, ref("gw"))
	statusForOther.Parents = []gatewayv1.RouteParentStatus{accepted(ref("other"), metav1.ConditionTrue)}
	statusOtherSection := route(KindHTTPRoute, []string{"a.apps.example.com"}, ref("gw"))
	statusOtherSection.Parents = []gatewayv1.RouteParentStatus{accepted(ref("gw", section("http")), metav1.ConditionTrue)}
	statusWithDefaults := route(KindHTTPRoute, []string{"a.apps.example.com"}, ref("gw"))
	statusWithDefaults.Parents = []gatewayv1.RouteParentStatus{accepted(ref("gw", refNS("app"), refKind(gatewayv1.GroupName, "Gateway")), metav1.ConditionTrue)}
	movedRoute := route(KindHTTPRoute, []string{"a.apps.example.com"}, ref("other"))
	movedRoute.Parents = append(movedRoute.Parents, accepted(ref("gw"), metav1.ConditionTrue)) // stale entry for the old Gateway
	twoParentsOneAccepted := route(KindHTTPRoute, []string{"a.apps.example.com"}, ref("gw"), ref("other"))
	twoParentsOneAccepted.Parents = twoParentsOneAccepted.Parents[:1]

	runRouteCases(t, []routeCase{
		{
			name:     "accepted parent publishes the route hostname at the Gateway address",
			gateways: []*gatewayv1.Gateway{appsGW()},
			route:    route(KindHTTPRoute, []string{"a.apps.example.com"}, ref("gw")),
			want:     []string{"a.apps.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"},
		},
		{
			name:     "missing status entry means not accepted",
			gateways: []*gatewayv1.Gateway{appsGW()},
			route:    noStatus,
			wantRej:  []string{"HTTPRoute/app/r - ParentNotAccepted"},
		},
		{
			name:     "Accepted=False is not accepted",
			gateways: []*gatewayv1.Gateway{appsGW()},
			route:    notAccepted,
			wantRej:  []string{"HTTPRoute/app/r - ParentNotAccepted"},
		},
		{
			name:     "status accepted for another Gateway does not count",
			gateways: []*gatewayv1.Gateway{appsGW(), otherGW},
			route:    statusForOther,
			wantRej:  []string{"HTTPRoute/app/r - ParentNotAccepted"},
		},
		{
			name:     "status for the same Gateway but another sectionName is another reference",
			gateways: []*gatewayv1.Gateway{appsGW()},
			route:    statusOtherSection,
			wantRej:  []string{"HTTPRoute/app/r - ParentNotAccepted"},
		},
		{
			name:     "status with defaults spelled out is the same reference",
			gateways: []*gatewayv1.Gateway{appsGW()},
			route:    statusWithDefaults,
			want:     []string{"a.apps.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"},
		},
		{
			name:     "route moved to another Gateway stops publishing the old address",
			gateways: []*gatewayv1.Gateway{appsGW(), otherGW},
			route:    movedRoute,
			want:     []string{"a.apps.example.com -> 10.0.0.9 ttl=0 from HTTPRoute/app/r"},
		},
		{
			name:     "only the accepted one of two parents publishes",
			gateways: []*gatewayv1.Gateway{appsGW(), otherGW},
			route:    twoParentsOneAccepted,
			want:     []string{"a.apps.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"},
			wantRej:  []string{"HTTPRoute/app/r - ParentNotAccepted"},
		},
		{
			name:     "targets of two accepted parents are unioned",
			gateways: []*gatewayv1.Gateway{appsGW(), otherGW},
			route:    route(KindHTTPRoute, []string{"a.apps.example.com"}, ref("gw"), ref("other")),
			want:     []string{"a.apps.example.com -> 10.0.0.1,10.0.0.9 ttl=0 from HTTPRoute/app/r"},
		},
		{
			name:     "parentRef of another kind (mesh Service) is ignored",
			gateways: []*gatewayv1.Gateway{appsGW()},
			route:    route(KindHTTPRoute, []string{"a.apps.example.com"}, ref("gw", refKind("", "Service"))),
		},
		{
			name:    "parent Gateway that does not exist is reported",
			route:   route(KindHTTPRoute, []string{"a.apps.example.com"}, ref("gw")),
			wantRej: []string{"HTTPRoute/app/r - ParentNotFound"},
		},
		{
			name:     "parentRef namespace selects the Gateway's namespace",
			gateways: []*gatewayv1.Gateway{gateway("infra", "gw", []gatewayv1.Listener{fromAll(listener("http", HTTP, 80, "*.apps.example.com"))}, "10.0.0.2")},
			route:    route(KindHTTPRoute, []string{"a.apps.example.com"}, ref("gw", refNS("infra"))),
			want:     []string{"a.apps.example.com -> 10.0.0.2 ttl=0 from HTTPRoute/app/r"},
		},
		{
			name:     "Gateway without status addresses yields no name",
			gateways: []*gatewayv1.Gateway{gateway("app", "gw", []gatewayv1.Listener{listener("http", HTTP, 80, "*.apps.example.com")})},
			route:    route(KindHTTPRoute, []string{"a.apps.example.com"}, ref("gw")),
			wantRej:  []string{"HTTPRoute/app/r - NoTargets"},
		},
	})
}

func TestRouteListeners(t *testing.T) {
	twoListeners := gateway("app", "gw", []gatewayv1.Listener{
		listener("web", HTTP, 80, "*.web.example.com"),
		listener("api", HTTP, 8080, "*.api.example.com"),
	}, "10.0.0.1")
	selectorListener := fromAll(listener("http", HTTP, 80, ""))
	selectorListener.AllowedRoutes.Namespaces = &gatewayv1.RouteNamespaces{
		From:     ptr(gatewayv1.NamespacesFromSelector),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"dns": "on"}},
	}
	noneListener := fromAll(listener("http", HTTP, 80, ""))
	noneListener.AllowedRoutes.Namespaces.From = ptr(gatewayv1.NamespacesFromNone)
	kindsListener := func(group *string, kinds ...string) gatewayv1.Listener {
		l := listener("http", HTTP, 80, "")
		l.AllowedRoutes = &gatewayv1.AllowedRoutes{}
		for _, k := range kinds {
			rgk := gatewayv1.RouteGroupKind{Kind: gatewayv1.Kind(k)}
			if group != nil {
				rgk.Group = ptr(gatewayv1.Group(*group))
			}
			l.AllowedRoutes.Kinds = append(l.AllowedRoutes.Kinds, rgk)
		}
		return l
	}
	host := []string{"a.example.com"}
	want := func(kind string) []string { return []string{"a.example.com -> 10.0.0.1 ttl=0 from " + kind + "/app/r"} }
	noListener := func(kind string) []string { return []string{kind + "/app/r - NoMatchingListener"} }
	infraGW := func(l gatewayv1.Listener) *gatewayv1.Gateway {
		return gateway("infra", "gw", []gatewayv1.Listener{l}, "10.0.0.1")
	}
	toInfra := ref("gw", refNS("infra"))

	runRouteCases(t, []routeCase{
		{name: "sectionName selects that listener", gateways: []*gatewayv1.Gateway{twoListeners},
			route: route(KindHTTPRoute, nil, ref("gw", section("api"))),
			want:  []string{"*.api.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"}},
		{name: "sectionName naming no listener matches nothing", gateways: []*gatewayv1.Gateway{twoListeners},
			route: route(KindHTTPRoute, nil, ref("gw", section("nope"))), wantRej: noListener(KindHTTPRoute)},
		{name: "port selects the listener on that port", gateways: []*gatewayv1.Gateway{twoListeners},
			route: route(KindHTTPRoute, nil, ref("gw", port(8080))),
			want:  []string{"*.api.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"}},
		{name: "port that no listener has matches nothing", gateways: []*gatewayv1.Gateway{twoListeners},
			route: route(KindHTTPRoute, nil, ref("gw", port(443))), wantRej: noListener(KindHTTPRoute)},
		{name: "sectionName and port must both match", gateways: []*gatewayv1.Gateway{twoListeners},
			route: route(KindHTTPRoute, nil, ref("gw", section("web"), port(8080))), wantRej: noListener(KindHTTPRoute)},
		{name: "no sectionName or port attaches to every listener", gateways: []*gatewayv1.Gateway{twoListeners},
			route: route(KindHTTPRoute, nil, ref("gw")),
			want: []string{"*.api.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r",
				"*.web.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"}},

		{name: "HTTPRoute attaches to HTTP", gateways: []*gatewayv1.Gateway{oneListenerGW(listener("l", HTTP, 80, ""))},
			route: route(KindHTTPRoute, host, ref("gw")), want: want(KindHTTPRoute)},
		{name: "HTTPRoute attaches to HTTPS", gateways: []*gatewayv1.Gateway{oneListenerGW(listener("l", HTTPS, 443, ""))},
			route: route(KindHTTPRoute, host, ref("gw")), want: want(KindHTTPRoute)},
		{name: "HTTPRoute does not attach to TLS", gateways: []*gatewayv1.Gateway{oneListenerGW(listener("l", TLS, 443, ""))},
			route: route(KindHTTPRoute, host, ref("gw")), wantRej: noListener(KindHTTPRoute)},
		{name: "GRPCRoute attaches to HTTP", gateways: []*gatewayv1.Gateway{oneListenerGW(listener("l", HTTP, 80, ""))},
			route: route(KindGRPCRoute, host, ref("gw")), want: want(KindGRPCRoute)},
		{name: "GRPCRoute attaches to HTTPS", gateways: []*gatewayv1.Gateway{oneListenerGW(listener("l", HTTPS, 443, ""))},
			route: route(KindGRPCRoute, host, ref("gw")), want: want(KindGRPCRoute)},
		{name: "GRPCRoute does not attach to TCP", gateways: []*gatewayv1.Gateway{oneListenerGW(listener("l", TCP, 9000, ""))},
			route: route(KindGRPCRoute, host, ref("gw")), wantRej: noListener(KindGRPCRoute)},
		{name: "TLSRoute attaches to TLS", gateways: []*gatewayv1.Gateway{oneListenerGW(listener("l", TLS, 443, ""))},
			route: route(KindTLSRoute, host, ref("gw")), want: want(KindTLSRoute)},
		{name: "TLSRoute does not attach to HTTPS", gateways: []*gatewayv1.Gateway{oneListenerGW(listener("l", HTTPS, 443, ""))},
			route: route(KindTLSRoute, host, ref("gw")), wantRej: noListener(KindTLSRoute)},
		{name: "TCPRoute attaches to TCP with its hostname annotation", gateways: []*gatewayv1.Gateway{oneListenerGW(listener("l", TCP, 5432, ""))},
			route: withAnnotations(route(KindTCPRoute, nil, ref("gw")), AnnotationPrefix+"hostname", "db.example.com"),
			want:  []string{"db.example.com -> 10.0.0.1 ttl=0 from TCPRoute/app/r"}},
		{name: "TCPRoute without hostname annotation on TCP has no name", gateways: []*gatewayv1.Gateway{oneListenerGW(listener("l", TCP, 5432, ""))},
			route: route(KindTCPRoute, nil, ref("gw")), wantRej: []string{"TCPRoute/app/r - NoMatchingHostname"}},
		{name: "TCP listener hostname is ignored as the Gateway API says", gateways: []*gatewayv1.Gateway{oneListenerGW(listener("l", TCP, 5432, "ignored.example.com"))},
			route: withAnnotations(route(KindTCPRoute, nil, ref("gw")), AnnotationPrefix+"hostname", "db.example.com"),
			want:  []string{"db.example.com -> 10.0.0.1 ttl=0 from TCPRoute/app/r"}},
		{name: "TCPRoute attaches to TLS and inherits its hostname", gateways: []*gatewayv1.Gateway{oneListenerGW(listener("l", TLS, 443, "db.example.com"))},
			route: route(KindTCPRoute, nil, ref("gw")), want: []string{"db.example.com -> 10.0.0.1 ttl=0 from TCPRoute/app/r"}},
		{name: "TCPRoute does not attach to HTTP", gateways: []*gatewayv1.Gateway{oneListenerGW(listener("l", HTTP, 80, "db.example.com"))},
			route: route(KindTCPRoute, nil, ref("gw")), wantRej: noListener(KindTCPRoute)},
		{name: "UDPRoute attaches to UDP", gateways: []*gatewayv1.Gateway{oneListenerGW(listener("l", UDP, 53, ""))},
			route: withAnnotations(route(KindUDPRoute, nil, ref("gw")), LegacyAnnotationPrefix+"hostname", "dns.example.com"),
			want:  []string{"dns.example.com -> 10.0.0.1 ttl=0 from UDPRoute/app/r"}},
		{name: "UDPRoute does not attach to TCP", gateways: []*gatewayv1.Gateway{oneListenerGW(listener("l", TCP, 53, ""))},
			route: route(KindUDPRoute, nil, ref("gw")), wantRej: noListener(KindUDPRoute)},

		{name: "allowedRoutes default Same admits the Gateway's namespace", gateways: []*gatewayv1.Gateway{infraGW(listener("l", HTTP, 80, ""))},
			route: inNamespace(route(KindHTTPRoute, host, ref("gw")), "infra"),
			want:  []string{"a.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/infra/r"}},
		{name: "allowedRoutes default Same rejects another namespace", gateways: []*gatewayv1.Gateway{infraGW(listener("l", HTTP, 80, ""))},
			route: route(KindHTTPRoute, host, toInfra), wantRej: noListener(KindHTTPRoute)},
		{name: "allowedRoutes All admits another namespace", gateways: []*gatewayv1.Gateway{infraGW(fromAll(listener("l", HTTP, 80, "")))},
			route: route(KindHTTPRoute, host, toInfra), want: want(KindHTTPRoute)},
		{name: "allowedRoutes Selector admits a namespace with matching labels", gateways: []*gatewayv1.Gateway{infraGW(selectorListener)},
			ns:    map[string]map[string]string{"app": {"dns": "on"}},
			route: route(KindHTTPRoute, host, toInfra), want: want(KindHTTPRoute)},
		{name: "allowedRoutes Selector rejects a namespace without matching labels", gateways: []*gatewayv1.Gateway{infraGW(selectorListener)},
			ns:    map[string]map[string]string{"app": {"dns": "off"}},
			route: route(KindHTTPRoute, host, toInfra), wantRej: noListener(KindHTTPRoute)},
		{name: "allowedRoutes Selector rejects an unknown namespace", gateways: []*gatewayv1.Gateway{infraGW(selectorListener)},
			route: route(KindHTTPRoute, host, toInfra), wantRej: noListener(KindHTTPRoute)},
		{name: "allowedRoutes None rejects every route", gateways: []*gatewayv1.Gateway{oneListenerGW(noneListener)},
			route: route(KindHTTPRoute, host, ref("gw")), wantRej: noListener(KindHTTPRoute)},
		{name: "allowedRoutes kinds listing the route kind admits it", gateways: []*gatewayv1.Gateway{oneListenerGW(kindsListener(nil, KindGRPCRoute, KindHTTPRoute))},
			route: route(KindHTTPRoute, host, ref("gw")), want: want(KindHTTPRoute)},
		{name: "allowedRoutes kinds not listing the route kind rejects it", gateways: []*gatewayv1.Gateway{oneListenerGW(kindsListener(nil, KindGRPCRoute))},
			route: route(KindHTTPRoute, host, ref("gw")), wantRej: noListener(KindHTTPRoute)},
		{name: "allowedRoutes kinds of another group rejects the route", gateways: []*gatewayv1.Gateway{oneListenerGW(kindsListener(ptr("example.com"), KindHTTPRoute))},
			route: route(KindHTTPRoute, host, ref("gw")), wantRej: noListener(KindHTTPRoute)},
		{name: "allowedRoutes kinds does not override the protocol", gateways: []*gatewayv1.Gateway{oneListenerGW(func() gatewayv1.Listener {
			l := kindsListener(nil, KindTLSRoute)
			l.Protocol = HTTP
			return l
		}())},
			route: route(KindTLSRoute, host, ref("gw")), wantRej: noListener(KindTLSRoute)},
		{name: "only the listeners that accept the route give names", gateways: []*gatewayv1.Gateway{gateway("app", "gw", []gatewayv1.Listener{
			listener("tls", TLS, 443, "*.tls.example.com"), listener("http", HTTP, 80, "*.web.example.com")}, "10.0.0.1")},
			route: route(KindTLSRoute, nil, ref("gw")), want: []string{"*.tls.example.com -> 10.0.0.1 ttl=0 from TLSRoute/app/r"}},
	})
}

func TestRouteHostnames(t *testing.T) {
	gwWith := func(hosts ...string) []*gatewayv1.Gateway {
		var ls []gatewayv1.Listener
		for i, h := range hosts {
			ls = append(ls, listener("l"+string(rune('a'+i)), HTTP, 80, h))
		}
		return []*gatewayv1.Gateway{gateway("app", "gw", ls, "10.0.0.1")}
	}
	claim := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, n+" -> 10.0.0.1 ttl=0 from HTTPRoute/app/r")
		}
		return out
	}
	r := func(hosts ...string) Route { return route(KindHTTPRoute, hosts, ref("gw")) }

	runRouteCases(t, []routeCase{
		{name: "equal names intersect to the name", gateways: gwWith("a.example.com"), route: r("a.example.com"), want: claim("a.example.com")},
		{name: "listener wildcard and specific route name give the route name", gateways: gwWith("*.example.com"), route: r("a.example.com"), want: claim("a.example.com")},
		{name: "route wildcard and specific listener name give the listener name", gateways: gwWith("a.example.com"), route: r("*.example.com"), want: claim("a.example.com")},
		{name: "wildcard matches several extra labels", gateways: gwWith("*.example.com"), route: r("a.b.c.example.com"), want: claim("a.b.c.example.com")},
		{name: "two wildcards give the more specific (listener side)", gateways: gwWith("*.b.example.com"), route: r("*.example.com"), want: claim("*.b.example.com")},
		{name: "two wildcards give the more specific (route side)", gateways: gwWith("*.example.com"), route: r("*.b.example.com"), want: claim("*.b.example.com")},
		{name: "equal wildcards give the wildcard", gateways: gwWith("*.example.com"), route: r("*.example.com"), want: claim("*.example.com")},
		{name: "listener wildcard never matches its suffix itself", gateways: gwWith("*.example.com"), route: r("example.com"),
			wantRej: []string{"HTTPRoute/app/r example.com NoMatchingHostname"}},
		{name: "route wildcard never matches the listener's suffix itself", gateways: gwWith("example.com"), route: r("*.example.com"),
			wantRej: []string{"HTTPRoute/app/r *.example.com NoMatchingHostname"}},
		{name: "wildcard needs a label boundary", gateways: gwWith("*.example.com"), route: r("badexample.com"),
			wantRej: []string{"HTTPRoute/app/r badexample.com NoMatchingHostname"}},
		{name: "different names do not intersect", gateways: gwWith("a.example.com"), route: r("b.example.com"),
			wantRej: []string{"HTTPRoute/app/r b.example.com NoMatchingHostname"}},
		{name: "matching and non-matching hostnames: publish one, report the other", gateways: gwWith("*.apps.example.com"), route: r("x.apps.example.com", "x.other.com"),
			want: claim("x.apps.example.com"), wantRej: []string{"HTTPRoute/app/r x.other.com NoMatchingHostname"}},
		{name: "route hostname with a listener without hostname gives the route hostname", gateways: gwWith(""), route: r("a.example.com"), want: claim("a.example.com")},
		{name: "route without hostnames inherits the listener hostname", gateways: gwWith("*.apps.example.com"), route: r(), want: claim("*.apps.example.com")},
		{name: "route without hostnames inherits each listener hostname", gateways: gwWith("a.example.com", "b.example.com"), route: r(), want: claim("a.example.com", "b.example.com")},
		{name: "route and listener without hostnames give nothing", gateways: gwWith(""), route: r(),
			wantRej: []string{"HTTPRoute/app/r - NoMatchingHostname"}},
		{name: "a hostname matched by two listeners is published once", gateways: gwWith("*.example.com", "*.apps.example.com"), route: r("a.apps.example.com"), want: claim("a.apps.example.com")},
		{name: "upper-case hostnames are lower-cased", gateways: gwWith("*.Apps.Example.com"), route: r("A.APPS.example.COM"), want: claim("a.apps.example.com")},
		{name: "duplicate hostnames give one name", gateways: gwWith(""), route: r("a.example.com", "A.example.com"), want: claim("a.example.com")},
		{name: "IPv4 literal hostname is rejected", gateways: gwWith(""), route: r("10.1.2.3"),
			wantRej: []string{"HTTPRoute/app/r 10.1.2.3 InvalidHostname"}},
		{name: "IPv6 literal hostname is rejected", gateways: gwWith(""), route: withAnnotations(r(), AnnotationPrefix+"hostname", "2001:db8::1"),
			wantRej: []string{"HTTPRoute/app/r 2001:db8::1 InvalidHostname"}},
		{name: "non DNS-1123 hostname is rejected", gateways: gwWith(""), route: r("bad_name.example.com", "ok.example.com"),
			want: claim("ok.example.com"), wantRej: []string{"HTTPRoute/app/r bad_name.example.com InvalidHostname"}},
		{name: "hostname with a label over 63 characters is rejected", gateways: gwWith(""), route: r("a234567890123456789012345678901234567890123456789012345678901234.example.com"),
			wantRej: []string{"HTTPRoute/app/r a234567890123456789012345678901234567890123456789012345678901234.example.com InvalidHostname"}},
		{name: "wildcard not in the first label is rejected", gateways: gwWith(""), route: r("a.*.example.com"),
			wantRej: []string{"HTTPRoute/app/r a.*.example.com InvalidHostname"}},
		{name: "route whose only hostname is invalid does not inherit the listener's", gateways: gwWith("*.apps.example.com"), route: r("-bad.apps.example.com"),
			wantRej: []string{"HTTPRoute/app/r -bad.apps.example.com InvalidHostname"}},
	})
}

func TestRouteAnnotations(t *testing.T) {
	gws := func() []*gatewayv1.Gateway {
		return []*gatewayv1.Gateway{gateway("app", "gw", []gatewayv1.Listener{listener("http", HTTP, 80, "")}, "10.0.0.1")}
	}
	r := withAnnotations
	base := func() Route { return route(KindHTTPRoute, []string{"a.example.com"}, ref("gw")) }
	bare := func() Route { return route(KindHTTPRoute, nil, ref("gw")) }
	a := func(ttl uint32, names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, n+" -> 10.0.0.1 ttl="+itoa(ttl)+" from HTTPRoute/app/r")
		}
		return out
	}
	cfg := Config{DefaultTTL: 300}

	runRouteCases(t, []routeCase{
		{name: "hostname annotation adds names", gateways: gws(), route: r(base(), AnnotationPrefix+"hostname", "b.example.com, c.example.com"),
			want: a(0, "a.example.com", "b.example.com", "c.example.com")},
		{name: "legacy hostname annotation adds names", gateways: gws(), route: r(bare(), LegacyAnnotationPrefix+"hostname", "b.example.com"),
			want: a(0, "b.example.com")},
		{name: "hostname annotation under both prefixes: the current prefix wins", gateways: gws(),
			route: r(bare(), AnnotationPrefix+"hostname", "new.example.com", LegacyAnnotationPrefix+"hostname", "old.example.com"),
			want:  a(0, "new.example.com")},
		{name: "hostname annotation is normalized: blanks, case, trailing dot, empty items", gateways: gws(),
			route: r(bare(), AnnotationPrefix+"hostname", " B.Example.COM. ,, "), want: a(0, "b.example.com")},
		{name: "hostname annotation names are intersected with listener hostnames",
			gateways: []*gatewayv1.Gateway{appsGW()},
			route:    r(bare(), AnnotationPrefix+"hostname", "x.apps.example.com,x.other.com"),
			want:     []string{"x.apps.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"},
			wantRej:  []string{"HTTPRoute/app/r x.other.com NoMatchingHostname"}},
		{name: "no ttl annotation uses the default TTL", cfg: cfg, gateways: gws(), route: base(), want: a(300, "a.example.com")},
		{name: "ttl annotation in seconds", cfg: cfg, gateways: gws(), route: r(base(), AnnotationPrefix+"ttl", "60"), want: a(60, "a.example.com")},
		{name: "ttl annotation as a Go duration", cfg: cfg, gateways: gws(), route: r(base(), AnnotationPrefix+"ttl", "5m"), want: a(300, "a.example.com")},
		{name: "ttl duration is truncated to whole seconds", cfg: cfg, gateways: gws(), route: r(base(), AnnotationPrefix+"ttl", "1m30.9s"), want: a(90, "a.example.com")},
		{name: "legacy ttl annotation", cfg: cfg, gateways: gws(), route: r(base(), LegacyAnnotationPrefix+"ttl", "120"), want: a(120, "a.example.com")},
		{name: "ttl annotation at the upper bound", cfg: cfg, gateways: gws(), route: r(base(), AnnotationPrefix+"ttl", "2147483647"), want: a(2147483647, "a.example.com")},
		{name: "ttl annotation at the lower bound", cfg: cfg, gateways: gws(), route: r(base(), AnnotationPrefix+"ttl", "1"), want: a(1, "a.example.com")},
		{name: "ttl annotation above the upper bound is rejected", cfg: cfg, gateways: gws(), route: r(base(), AnnotationPrefix+"ttl", "2147483648"),
			want: a(300, "a.example.com"), wantRej: []string{"HTTPRoute/app/r - InvalidTTL"}},
		{name: "ttl annotation of zero is rejected", cfg: cfg, gateways: gws(), route: r(base(), AnnotationPrefix+"ttl", "0"),
			want: a(300, "a.example.com"), wantRej: []string{"HTTPRoute/app/r - InvalidTTL"}},
		{name: "ttl annotation below a second is rejected", cfg: cfg, gateways: gws(), route: r(base(), AnnotationPrefix+"ttl", "500ms"),
			want: a(300, "a.example.com"), wantRej: []string{"HTTPRoute/app/r - InvalidTTL"}},
		{name: "ttl annotation that is not a number is rejected", cfg: cfg, gateways: gws(), route: r(base(), AnnotationPrefix+"ttl", "soon"),
			want: a(300, "a.example.com"), wantRej: []string{"HTTPRoute/app/r - InvalidTTL"}},
	})
}

func TestRouteTargets(t *testing.T) {
	l := []gatewayv1.Listener{listener("http", HTTP, 80, "")}
	r := route(KindHTTPRoute, []string{"a.example.com"}, ref("gw"))
	at := func(targets string) []string {
		return []string{"a.example.com -> " + targets + " ttl=0 from HTTPRoute/app/r"}
	}
	specOnly := gateway("app", "gw", l)
	specOnly.Spec.Addresses = []gatewayv1.GatewaySpecAddress{{Type: ptr(gatewayv1.IPAddressType), Value: "192.0.2.1"}}
	untyped := gateway("app", "gw", l)
	untyped.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Value: "192.0.2.7"}}

	runRouteCases(t, []routeCase{
		{name: "every IPAddress status address is a target", gateways: []*gatewayv1.Gateway{gateway("app", "gw", l, "10.0.0.2", "10.0.0.1")}, route: r, want: at("10.0.0.1,10.0.0.2")},
		{name: "IPv6 status address is a target", gateways: []*gatewayv1.Gateway{gateway("app", "gw", l, "2001:DB8::1")}, route: r, want: at("2001:db8::1")},
		{name: "status address without type is an IP address", gateways: []*gatewayv1.Gateway{untyped}, route: r, want: at("192.0.2.7")},
		{name: "Hostname status address is a CNAME target", gateways: []*gatewayv1.Gateway{gateway("app", "gw", l, "host:LB.Example.NET")}, route: r, want: at("lb.example.net")},
		{name: "IP and Hostname status addresses both reach the claim", gateways: []*gatewayv1.Gateway{gateway("app", "gw", l, "10.0.0.1", "host:lb.example.net")}, route: r, want: at("10.0.0.1,lb.example.net")},
		{name: "spec.addresses is never used", gateways: []*gatewayv1.Gateway{specOnly}, route: r, wantRej: []string{"HTTPRoute/app/r - NoTargets"}},
		{name: "unsupported status address types are left out", gateways: []*gatewayv1.Gateway{gateway("app", "gw", l, "type:NamedAddress:my-ip", "10.0.0.1")}, route: r, want: at("10.0.0.1")},
		{name: "target annotation overrides the status addresses",
			gateways: []*gatewayv1.Gateway{gwAnnotate(gateway("app", "gw", l, "10.0.0.1"), AnnotationPrefix+"target", "192.0.2.1, 192.0.2.2")}, route: r, want: at("192.0.2.1,192.0.2.2")},
		{name: "legacy target annotation overrides the status addresses",
			gateways: []*gatewayv1.Gateway{gwAnnotate(gateway("app", "gw", l, "10.0.0.1"), LegacyAnnotationPrefix+"target", "edge.example.net.")}, route: r, want: at("edge.example.net")},
		{name: "empty target annotation falls back to the status addresses",
			gateways: []*gatewayv1.Gateway{gwAnnotate(gateway("app", "gw", l, "10.0.0.1"), AnnotationPrefix+"target", " ")}, route: r, want: at("10.0.0.1")},
		{name: "the route's own target annotation is not used",
			gateways: []*gatewayv1.Gateway{gateway("app", "gw", l, "10.0.0.1")}, route: withAnnotations(r, AnnotationPrefix+"target", "192.0.2.1"), want: at("10.0.0.1")},
	})
}

// TestRouteThroughAGatewayThatIsNotProgrammed: a Gateway whose Programmed condition is False
// contributes no addresses (its names are withdrawn from this cluster, and the route is told
// why); True, Unknown or no condition at all publish as before.
func TestRouteThroughAGatewayThatIsNotProgrammed(t *testing.T) {
	l := []gatewayv1.Listener{listener("http", HTTP, 80, "")}
	r := route(KindHTTPRoute, []string{"a.example.com"}, ref("gw"))
	programmed := func(status metav1.ConditionStatus, gw *gatewayv1.Gateway) *gatewayv1.Gateway {
		gw.Status.Conditions = []metav1.Condition{
			{Type: string(gatewayv1.GatewayConditionAccepted), Status: metav1.ConditionTrue},
			{Type: string(gatewayv1.GatewayConditionProgrammed), Status: status},
		}
		return gw
	}
	at := []string{"a.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"}
	runRouteCases(t, []routeCase{
		{name: "Programmed False withdraws the addresses", gateways: []*gatewayv1.Gateway{programmed(metav1.ConditionFalse, gateway("app", "gw", l, "10.0.0.1"))},
			route: r, wantRej: []string{"HTTPRoute/app/r - NotProgrammed"}},
		{name: "Programmed False withdraws annotated targets too", gateways: []*gatewayv1.Gateway{programmed(metav1.ConditionFalse, gwAnnotate(gateway("app", "gw", l), AnnotationPrefix+"target", "192.0.2.1"))},
			route: r, wantRej: []string{"HTTPRoute/app/r - NotProgrammed"}},
		{name: "Programmed True publishes", gateways: []*gatewayv1.Gateway{programmed(metav1.ConditionTrue, gateway("app", "gw", l, "10.0.0.1"))}, route: r, want: at},
		{name: "Programmed Unknown publishes", gateways: []*gatewayv1.Gateway{programmed(metav1.ConditionUnknown, gateway("app", "gw", l, "10.0.0.1"))}, route: r, want: at},
		{name: "no Programmed condition publishes (controllers that never set it)", gateways: []*gatewayv1.Gateway{gateway("app", "gw", l, "10.0.0.1")}, route: r, want: at},
	})
}

func TestRouteFilters(t *testing.T) {
	gws := func() []*gatewayv1.Gateway { return []*gatewayv1.Gateway{appsGW()} }
	r := route(KindHTTPRoute, []string{"a.apps.example.com"}, ref("gw"))
	ok := []string{"a.apps.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"}
	based := func(v string) []*gatewayv1.Gateway {
		return []*gatewayv1.Gateway{gwAnnotate(gateway("app", "gw", []gatewayv1.Listener{listener("http", HTTP, 80, "")}, "10.0.0.1"), BaseDomainAnnotation, v)}
	}
	rb := route(KindHTTPRoute, []string{"a.c1.example.com", "b.c2.example.com", "c1.example.com"}, ref("gw"))

	runRouteCases(t, []routeCase{
		{name: "GatewayClass filter admits the Gateway's class", cfg: Config{GatewayClasses: []string{"other", "cls"}}, gateways: gws(), route: r, want: ok},
		{name: "GatewayClass filter leaves out other classes silently", cfg: Config{GatewayClasses: []string{"other"}}, gateways: gws(), route: r},
		{name: "gateway-name admits the Gateway of that name", cfg: Config{GatewayName: "gw"}, gateways: gws(), route: r, want: ok},
		{name: "gateway-name leaves out other Gateways silently", cfg: Config{GatewayName: "other"}, gateways: gws(), route: r},
		{name: "gateway-namespace admits Gateways of that namespace", cfg: Config{GatewayNamespace: "app"}, gateways: gws(), route: r, want: ok},
		{name: "gateway-namespace leaves out Gateways of other namespaces silently", cfg: Config{GatewayNamespace: "infra"}, gateways: gws(), route: r},
		{name: "gateway-label-filter admits Gateways whose labels match", cfg: Config{GatewayLabelSelector: mustSelector("dns=public")}, gateways: []*gatewayv1.Gateway{gwLabels(appsGW(), "dns", "public")}, route: r, want: ok},
		{name: "gateway-label-filter leaves out other Gateways silently", cfg: Config{GatewayLabelSelector: mustSelector("dns=public")}, gateways: []*gatewayv1.Gateway{gwLabels(appsGW(), "dns", "private")}, route: r},
		{name: "gateway-label-filter leaves out a Gateway without labels", cfg: Config{GatewayLabelSelector: mustSelector("dns=public")}, gateways: gws(), route: r},
		{name: "the Gateway filters combine", cfg: Config{GatewayName: "gw", GatewayNamespace: "app", GatewayLabelSelector: mustSelector("dns")}, gateways: []*gatewayv1.Gateway{gwLabels(appsGW(), "dns", "x")}, route: r, want: ok},
		{name: "controller annotation naming this controller is ours", cfg: Config{ControllerName: "gatewaydns"}, gateways: gws(),
			route: withAnnotations(r, AnnotationPrefix+"controller", "gatewaydns"), want: ok},
		{name: "controller annotation naming another controller is skipped", cfg: Config{ControllerName: "gatewaydns"}, gateways: gws(),
			route: withAnnotations(r, AnnotationPrefix+"controller", "dns-controller")},
		{name: "legacy controller annotation naming another controller is skipped", cfg: Config{ControllerName: "gatewaydns"}, gateways: gws(),
			route: withAnnotations(r, LegacyAnnotationPrefix+"controller", "dns-controller")},
		{name: "a Gateway whose controller annotation names this controller is ours", cfg: Config{ControllerName: "gatewaydns"},
			gateways: []*gatewayv1.Gateway{gwAnnotate(appsGW(), AnnotationPrefix+"controller", "gatewaydns")}, route: r, want: ok},
		{name: "a Gateway annotated for another controller publishes none of its routes, silently", cfg: Config{ControllerName: "gatewaydns"},
			gateways: []*gatewayv1.Gateway{gwAnnotate(appsGW(), AnnotationPrefix+"controller", "dns-controller")}, route: r},
		{name: "a Gateway with the legacy controller annotation for another controller publishes none of its routes", cfg: Config{ControllerName: "gatewaydns"},
			gateways: []*gatewayv1.Gateway{gwAnnotate(appsGW(), LegacyAnnotationPrefix+"controller", "dns-controller")}, route: r},
		{name: "namespace filter admits listed namespaces", cfg: Config{Namespaces: []string{"app"}}, gateways: gws(), route: r, want: ok},
		{name: "namespace filter leaves out other namespaces", cfg: Config{Namespaces: []string{"other"}}, gateways: gws(), route: r},
		{name: "label selector admits matching routes", cfg: Config{LabelSelector: mustSelector("team=a")}, gateways: gws(), route: withLabels(r, "team", "a"), want: ok},
		{name: "label selector leaves out other routes", cfg: Config{LabelSelector: mustSelector("team=a")}, gateways: gws(), route: withLabels(r, "team", "b")},
		{name: "annotation filter admits matching routes", cfg: Config{AnnotationFilter: mustSelector("dns in (public)")}, gateways: gws(),
			route: withAnnotations(r, "dns", "public"), want: ok},
		{name: "annotation filter leaves out other routes", cfg: Config{AnnotationFilter: mustSelector("dns in (public)")}, gateways: gws(), route: r},
		{name: "domain filter admits names inside", cfg: Config{DomainFilter: NewDomainFilter([]string{"example.com"}, nil)}, gateways: gws(), route: r, want: ok},
		{name: "a route with every name outside the zones is another controller's: published nowhere, no Event",
			cfg: Config{DomainFilter: NewDomainFilter([]string{"example.org"}, nil), Zones: NewDomainFilter([]string{"example.org"}, nil)}, gateways: gws(), route: r},
		{name: "a route asking for a name in the zones but outside the domain filter is told (another cluster's subdomain)",
			cfg: Config{DomainFilter: NewDomainFilter([]string{"b.example.com"}, nil), Zones: NewDomainFilter([]string{"example.com"}, nil)}, gateways: gws(), route: r,
			wantRej: []string{"HTTPRoute/app/r a.apps.example.com DomainFilter"}},
		{name: "a route with every name excluded is another controller's too", cfg: Config{DomainFilter: NewDomainFilter([]string{"example.com"}, []string{"apps.example.com"})}, gateways: gws(), route: r},
		{name: "a route with a name inside is told about its names outside", cfg: Config{DomainFilter: NewDomainFilter([]string{"example.com"}, []string{"a.apps.example.com"})}, gateways: gws(),
			route: route(KindHTTPRoute, []string{"a.apps.example.com", "b.apps.example.com"}, ref("gw")),
			want:  []string{"b.apps.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"}, wantRej: []string{"HTTPRoute/app/r a.apps.example.com DomainFilter"}},
		{name: "base domain admits names equal to or under it and rejects others", cfg: Config{BaseDomainFromGateway: true}, gateways: based("C1.example.com."), route: rb,
			want:    []string{"a.c1.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r", "c1.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"},
			wantRej: []string{"HTTPRoute/app/r b.c2.example.com BaseDomain"}},
		{name: "base domain is ignored when the option is off", gateways: based("c1.example.com"), route: rb,
			want: []string{"a.c1.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r", "b.c2.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r",
				"c1.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"}},
		{name: "Gateway without base domain adds no restriction", cfg: Config{BaseDomainFromGateway: true}, gateways: gws(), route: r, want: ok},
		{name: "invalid base domain publishes nothing through the Gateway", cfg: Config{BaseDomainFromGateway: true}, gateways: based("*.example.com"),
			route: route(KindHTTPRoute, []string{"a.example.com"}, ref("gw")), wantRej: []string{"HTTPRoute/app/r a.example.com BaseDomain"}},
		{name: "base domain and domain filter both apply",
			cfg:      Config{BaseDomainFromGateway: true, DomainFilter: NewDomainFilter(nil, []string{"a.c1.example.com"})},
			gateways: based("c1.example.com"), route: rb,
			want:    []string{"c1.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"},
			wantRej: []string{"HTTPRoute/app/r a.c1.example.com DomainFilter", "HTTPRoute/app/r b.c2.example.com BaseDomain"}},
	})
}

func TestRouteClaimsCarryProvenance(t *testing.T) {
	r := route(KindGRPCRoute, []string{"a.apps.example.com"}, ref("gw"))
	claims, rej := (&Config{DefaultTTL: 30}).RouteClaims(r, lookup([]*gatewayv1.Gateway{appsGW()}), nil)
	if len(rej) != 0 || len(claims) != 1 {
		t.Fatalf("claims %v, rejections %v", claims, rej)
	}
	c := claims[0]
	if c.Source.Kind != KindGRPCRoute || c.Source.Namespace != "app" || c.Source.Name != "r" || !c.Created.Equal(t0) || c.TTL != 30 {
		t.Errorf("claim = %+v", c)
	}
}

func TestRouteRejectionReasons(t *testing.T) {
	gw := gateway("app", "gw", []gatewayv1.Listener{listener("web", HTTP, 80, ""), listener("tls", TLS, 443, "")}, "10.0.0.1")
	cases := []struct {
		name  string
		route Route
		want  string
	}{
		{"no listener names each listener's reason", route(KindHTTPRoute, []string{"a.example.com"}, ref("gw", port(8443))),
			"HTTPRoute/app/r: no listener of Gateway app/gw accepts the route: listener web: port 8443 differs from the listener port 80; listener tls: port 8443 differs from the listener port 443"},
		{"protocol reason", route(KindUDPRoute, nil, ref("gw", section("tls"))),
			"UDPRoute/app/r: no listener of Gateway app/gw accepts the route: listener web: sectionName tls names another listener; listener tls: protocol TLS does not accept UDPRoute"},
		{"invalid hostname reason", route(KindHTTPRoute, []string{"1.2.3.4"}, ref("gw")),
			"HTTPRoute/app/r: 1.2.3.4: hostname is an IP address, not a DNS name"},
		{"invalid ttl reason", withAnnotations(route(KindHTTPRoute, []string{"a.example.com"}, ref("gw")), LegacyAnnotationPrefix+"ttl", "-5"),
			"HTTPRoute/app/r: annotation external-dns.alpha.kubernetes.io/ttl: \"-5\" is out of range: a TTL must be 1..2147483647 seconds; using the default TTL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, rej := (&Config{}).RouteClaims(tc.route, lookup([]*gatewayv1.Gateway{gw}), nil)
			if len(rej) != 1 || rej[0].String() != tc.want {
				t.Errorf("got %q\nwant %q", rej, tc.want)
			}
		})
	}
}
