package source

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
)

func TestRouteOf(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "app", Name: "r", CreationTimestamp: metav1.NewTime(t0)}
	common := gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{ref("gw")}}
	hosts := []gatewayv1.Hostname{"a.example.com"}
	cases := []struct {
		obj       any
		kind      string
		hostnames int
	}{
		{&gatewayv1.HTTPRoute{ObjectMeta: meta, Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: common, Hostnames: hosts}}, KindHTTPRoute, 1},
		{&gatewayv1.GRPCRoute{ObjectMeta: meta, Spec: gatewayv1.GRPCRouteSpec{CommonRouteSpec: common, Hostnames: hosts}}, KindGRPCRoute, 1},
		{&gatewayv1.TLSRoute{ObjectMeta: meta, Spec: gatewayv1.TLSRouteSpec{CommonRouteSpec: common, Hostnames: hosts}}, KindTLSRoute, 1},
		{&gatewayv1.TCPRoute{ObjectMeta: meta, Spec: gatewayv1.TCPRouteSpec{CommonRouteSpec: common}}, KindTCPRoute, 0},
		{&gatewayv1.UDPRoute{ObjectMeta: meta, Spec: gatewayv1.UDPRouteSpec{CommonRouteSpec: common}}, KindUDPRoute, 0},
		{&gatewayv1alpha2.TLSRoute{ObjectMeta: meta, Spec: gatewayv1alpha2.TLSRouteSpec{CommonRouteSpec: common, Hostnames: hosts}}, KindTLSRoute, 1},
		{&gatewayv1alpha2.TCPRoute{ObjectMeta: meta, Spec: gatewayv1alpha2.TCPRouteSpec{CommonRouteSpec: common}}, KindTCPRoute, 0},
		{&gatewayv1alpha2.UDPRoute{ObjectMeta: meta, Spec: gatewayv1alpha2.UDPRouteSpec{CommonRouteSpec: common}}, KindUDPRoute, 0},
	}
	for _, tc := range cases {
		r, ok := RouteOf(tc.obj)
		if !ok || r.Kind != tc.kind || r.Namespace != "app" || r.Name != "r" || !r.Created.Equal(t0) ||
			len(r.Hostnames) != tc.hostnames || len(r.ParentRefs) != 1 {
			t.Errorf("RouteOf(%T) = %+v, %v", tc.obj, r, ok)
		}
	}
	if _, ok := RouteOf(&gatewayv1.Gateway{}); ok {
		t.Error("RouteOf accepted a Gateway")
	}
}

func TestParentGatewayKeys(t *testing.T) {
	obj := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "r"},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{
			ref("gw", section("http")), ref("gw", section("https")), ref("shared", refNS("infra")),
			ref("svc", refKind("", "Service")), ref("ls", refKind(gatewayv1.GroupName, "ListenerSet")),
		}}},
		// status for a Gateway the spec no longer names does not count
		Status: gatewayv1.HTTPRouteStatus{RouteStatus: gatewayv1.RouteStatus{Parents: []gatewayv1.RouteParentStatus{accepted(ref("old"), metav1.ConditionTrue)}}},
	}
	keys, err := ParentGatewayKeys(obj)
	if err != nil || !slices.Equal(keys, []string{"app/gw", "infra/shared"}) {
		t.Errorf("ParentGatewayKeys = %q, %v", keys, err)
	}
	if keys, err := ParentGatewayKeys(&gatewayv1.Gateway{}); keys != nil || err != nil {
		t.Errorf("ParentGatewayKeys(Gateway) = %q, %v", keys, err)
	}
}

func TestGatewayRejections(t *testing.T) {
	l := []gatewayv1.Listener{listener("http", HTTP, 80, "")}
	cases := []struct {
		name string
		cfg  Config
		gw   *gatewayv1.Gateway
		want []string
	}{
		{"usable Gateway has none", Config{}, gateway("infra", "gw", l, "10.0.0.1", "host:lb.example.net"), nil},
		{"unsupported address type", Config{}, gateway("infra", "gw", l, "type:example.com/pool:blue"),
			[]string{"Gateway/infra/gw: status address \"blue\" has type example.com/pool, which cannot be published"}},
		{"IPAddress that is no IP", Config{}, gateway("infra", "gw", l, "lb.example.net"),
			[]string{"Gateway/infra/gw: status address \"lb.example.net\" of type IPAddress is not an IP address"}},
		{"Hostname that is an IP", Config{}, gateway("infra", "gw", l, "host:10.0.0.1"),
			[]string{"Gateway/infra/gw: status address \"10.0.0.1\" of type Hostname is an IP address"}},
		{"invalid target annotation entry", Config{}, gwAnnotate(gateway("infra", "gw", l), AnnotationPrefix+"target", "10.0.0.1,no_way"),
			[]string{"Gateway/infra/gw: annotation external-dns.kubernetes.io/target: target \"no_way\" is neither an IP address nor a valid host name: label \"no_way\" holds '_'; only a-z, 0-9 and '-' are allowed"}},
		{"invalid base domain with the option on", Config{BaseDomainFromGateway: true}, gwAnnotate(gateway("infra", "gw", l, "10.0.0.1"), BaseDomainAnnotation, "10.0.0.0"),
			[]string{"Gateway/infra/gw: annotation dns.openmcp.cloud/base-domain=\"10.0.0.0\" is not a domain: hostname is an IP address, not a DNS name"}},
		{"invalid base domain with the option off", Config{}, gwAnnotate(gateway("infra", "gw", l, "10.0.0.1"), BaseDomainAnnotation, "10.0.0.0"), nil},
		{"Gateway of another class", Config{GatewayClasses: []string{"other"}}, gateway("infra", "gw", l, "lb.example.net"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range tc.cfg.GatewayRejections(tc.gw) {
				got = append(got, r.String())
			}
			assertLines(t, "rejections", got, tc.want)
		})
	}
}
