package source

import (
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestRouteHostnameSource pins the gateway-hostname-source annotation to external-dns's
// semantics (its gateway_httproute_test.go "SourceAnnotation", "OnlyAnnotationHost" and
// "InvalidSourceAnnotation" cases), under both prefixes, and what it means for a route that
// would otherwise inherit a listener's hostname.
func TestRouteHostnameSource(t *testing.T) {
	open := func() []*gatewayv1.Gateway {
		return []*gatewayv1.Gateway{gateway("app", "gw", []gatewayv1.Listener{listener("http", HTTP, 80, "")}, "10.0.0.1")}
	}
	apps := func() []*gatewayv1.Gateway { return []*gatewayv1.Gateway{appsGW()} }
	withBoth := func(prefix, source string) Route {
		return withAnnotations(route(KindHTTPRoute, []string{"spec.example.com"}, ref("gw")),
			prefix+GatewayHostnameSourceAnnotation, source, prefix+HostnameAnnotation, "annotated.example.com")
	}
	at := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, n+" -> 10.0.0.1 ttl=0 from HTTPRoute/app/r")
		}
		return out
	}
	var cases []routeCase
	for _, prefix := range []string{AnnotationPrefix, LegacyAnnotationPrefix} {
		cases = append(cases,
			routeCase{name: prefix + ": absent: spec.hostnames and the hostname annotation", gateways: open(),
				route: withAnnotations(route(KindHTTPRoute, []string{"spec.example.com"}, ref("gw")), prefix+HostnameAnnotation, "annotated.example.com"),
				want:  at("annotated.example.com", "spec.example.com")},
			routeCase{name: prefix + ": defined-hosts-only: spec.hostnames alone", gateways: open(),
				route: withBoth(prefix, "defined-hosts-only"), want: at("spec.example.com")},
			routeCase{name: prefix + ": annotation-only: the hostname annotation alone", gateways: open(),
				route: withBoth(prefix, "annotation-only"), want: at("annotated.example.com")},
			routeCase{name: prefix + ": the value is case-insensitive", gateways: open(),
				route: withBoth(prefix, "Annotation-Only"), want: at("annotated.example.com")},
			routeCase{name: prefix + ": an invalid value is reported and read as absent", gateways: open(),
				route: withBoth(prefix, "invalid-value"), want: at("annotated.example.com", "spec.example.com"),
				wantRej: []string{"HTTPRoute/app/r - InvalidAnnotation"}},
		)
	}
	cases = append(cases,
		routeCase{name: "annotation-only names are still intersected with the listener hostnames", gateways: apps(),
			route: withAnnotations(route(KindHTTPRoute, []string{"a.apps.example.com"}, ref("gw")),
				AnnotationPrefix+GatewayHostnameSourceAnnotation, "annotation-only", AnnotationPrefix+HostnameAnnotation, "x.apps.example.com,x.other.com"),
			want:    []string{"x.apps.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"},
			wantRej: []string{"HTTPRoute/app/r x.other.com NoMatchingHostname"}},
		routeCase{name: "annotation-only without a hostname annotation publishes nothing, not the listener's hostname", gateways: apps(),
			route: withAnnotations(route(KindHTTPRoute, nil, ref("gw")), AnnotationPrefix+GatewayHostnameSourceAnnotation, "annotation-only")},
		routeCase{name: "defined-hosts-only without spec.hostnames publishes nothing, not the listener's hostname", gateways: apps(),
			route: withAnnotations(route(KindHTTPRoute, nil, ref("gw")), AnnotationPrefix+GatewayHostnameSourceAnnotation, "defined-hosts-only",
				AnnotationPrefix+HostnameAnnotation, "x.apps.example.com")},
		routeCase{name: "absent on a route without hostnames inherits the listener's hostname", gateways: apps(),
			route: route(KindHTTPRoute, nil, ref("gw")), want: []string{"*.apps.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"}},
		routeCase{name: "the current prefix wins over the legacy one", gateways: open(),
			route: withAnnotations(route(KindHTTPRoute, []string{"spec.example.com"}, ref("gw")),
				LegacyAnnotationPrefix+GatewayHostnameSourceAnnotation, "annotation-only", AnnotationPrefix+GatewayHostnameSourceAnnotation, "defined-hosts-only",
				AnnotationPrefix+HostnameAnnotation, "annotated.example.com"),
			want: at("spec.example.com")},
		routeCase{name: "configured prefixes replace the defaults", cfg: Config{AnnotationPrefixes: []string{"dns.example.org/"}}, gateways: open(),
			route: withAnnotations(route(KindHTTPRoute, []string{"spec.example.com"}, ref("gw")),
				AnnotationPrefix+GatewayHostnameSourceAnnotation, "defined-hosts-only", AnnotationPrefix+HostnameAnnotation, "theirs.example.com",
				"dns.example.org/"+GatewayHostnameSourceAnnotation, "annotation-only", "dns.example.org/"+HostnameAnnotation, "mine.example.com"),
			want: at("mine.example.com")},
	)
	runRouteCases(t, cases)
}

// TestIngressHostnameSource pins the ingress-hostname-source annotation to external-dns's
// semantics (its ingress_test.go "Ingress-hostname-source" cases), under both prefixes.
func TestIngressHostnameSource(t *testing.T) {
	lb := []string{"10.0.0.1"}
	at := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, n+" -> 10.0.0.1 ttl=0 from Ingress/app/ing")
		}
		return out
	}
	type ingressCase struct {
		name         string
		cfg          Config
		kv           []string
		want, wantRj []string
	}
	var cases []ingressCase
	for _, prefix := range []string{AnnotationPrefix, LegacyAnnotationPrefix} {
		host := prefix + HostnameAnnotation
		src := prefix + IngressHostnameSourceAnnotation
		cases = append(cases,
			ingressCase{name: prefix + ": absent: rules, tls and the hostname annotation", kv: []string{host, "annotated.example.com"},
				want: at("annotated.example.com", "rule.example.com", "tls.example.com")},
			ingressCase{name: prefix + ": defined-hosts-only: rules and tls alone", kv: []string{host, "annotated.example.com", src, "defined-hosts-only"},
				want: at("rule.example.com", "tls.example.com")},
			ingressCase{name: prefix + ": annotation-only: the hostname annotation alone", kv: []string{host, "annotated.example.com", src, "annotation-only"},
				want: at("annotated.example.com")},
			ingressCase{name: prefix + ": the value is case-insensitive", kv: []string{host, "annotated.example.com", src, "DEFINED-HOSTS-ONLY"},
				want: at("rule.example.com", "tls.example.com")},
			ingressCase{name: prefix + ": an invalid value publishes nothing, as in external-dns, and is reported", kv: []string{host, "annotated.example.com", src, "both"},
				wantRj: []string{"Ingress/app/ing - InvalidAnnotation"}},
		)
	}
	cases = append(cases,
		ingressCase{name: "annotation-only without a hostname annotation publishes nothing", kv: []string{AnnotationPrefix + IngressHostnameSourceAnnotation, "annotation-only"}},
		ingressCase{name: "configured prefixes replace the defaults", cfg: Config{AnnotationPrefixes: []string{"dns.example.org/"}},
			kv:   []string{AnnotationPrefix + IngressHostnameSourceAnnotation, "annotation-only", "dns.example.org/" + HostnameAnnotation, "mine.example.com"},
			want: at("mine.example.com", "rule.example.com", "tls.example.com")},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ing := withTLS(ingress([]string{"rule.example.com"}, lb, tc.kv...), "tls.example.com")
			claims, rej := tc.cfg.IngressClaims(ing)
			assertLines(t, "claims", fmtClaims(claims), tc.want)
			assertLines(t, "rejections", fmtRejections(rej), tc.wantRj)
		})
	}
}
