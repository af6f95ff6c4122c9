package source

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

const edns = AnnotationPrefix // external-dns's annotation prefix, for its Route 53 forms

// policies renders what each claim asks: "name: policy".
func policies(cs []Claim) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name+": "+c.Policy.String())
	}
	return out
}

// rejectionsSaying renders rejections as fmtRejections does, each followed by its reason.
func rejectionsSaying(rs []Rejection) []string {
	var out []string
	for i, line := range fmtRejections(rs) {
		out = append(out, line+": "+rs[i].Reason)
	}
	return out
}

// checkRejections checks that rejections are exactly want, each "Kind/ns/name host Cause"
// followed by words its reason must hold ("Kind/ns/name host Cause: words").
func checkRejections(t *testing.T, got []Rejection, want []string) {
	t.Helper()
	lines := fmtRejections(got)
	if len(lines) != len(want) {
		t.Fatalf("rejections:\n got: %q\nwant: %q", rejectionsSaying(got), want)
	}
	for i, w := range want {
		head, words, _ := strings.Cut(w, ": ")
		if lines[i] != head || !strings.Contains(got[i].Reason, words) {
			t.Errorf("rejection %d: %s: %s\nwant %s", i, lines[i], got[i].Reason, w)
		}
	}
}

func TestRouteSteeringFromRouteAndGateway(t *testing.T) {
	gw := func(kv ...string) *gatewayv1.Gateway { return gwAnnotate(appsGW(), kv...) }
	r := route(KindHTTPRoute, []string{"web.apps.example.com"}, ref("gw"))
	for _, tc := range []struct {
		behaviour string
		gateway   *gatewayv1.Gateway
		route     Route
		want      string
		wantRej   []string
		gwRej     []string
	}{
		{behaviour: "no annotations: no policy, as today", gateway: gw(), route: r, want: "no steering policy"},
		{behaviour: "every annotation on the route",
			gateway: gw(), route: withAnnotations(r, WeightAnnotation, "90", PriorityAnnotation, "1", HealthCheckAnnotation, "tcp://:443"),
			want: "weight 90, priority 1, health check tcp://:443"},
		{behaviour: "the Gateway's annotations are the default of every name through it",
			gateway: gw(PriorityAnnotation, "2", HealthCheckAnnotation, "http://:8080/healthz"), route: r,
			want: "priority 2, health check http://:8080/healthz"},
		{behaviour: "the route decides a field it sets, the Gateway the others",
			gateway: gw(PriorityAnnotation, "2", WeightAnnotation, "50"), route: withAnnotations(r, WeightAnnotation, "10"),
			want: "weight 10, priority 2"},
		{behaviour: "weight 0 is a weight, priority 0 a priority",
			gateway: gw(PriorityAnnotation, "2"), route: withAnnotations(r, WeightAnnotation, "0", PriorityAnnotation, "0"),
			want: "weight 0, priority 0"},
		{behaviour: "blanks around a value are read",
			gateway: gw(), route: withAnnotations(r, WeightAnnotation, " 7 "), want: "weight 7"},
		{behaviour: "an invalid weight on the route: reported, the name published without the route's policy",
			gateway: gw(), route: withAnnotations(r, WeightAnnotation, "heavy", PriorityAnnotation, "1"),
			want:    "no steering policy",
			wantRej: []string{`HTTPRoute/app/r - InvalidAnnotation: annotation gatewaydns.io/weight: "heavy" is not a whole number 0..1000; publishing without this steering policy`}},
		{behaviour: "an invalid route annotation leaves the Gateway's in force",
			gateway: gw(PriorityAnnotation, "2"), route: withAnnotations(r, WeightAnnotation, "1001"),
			want:    "priority 2",
			wantRej: []string{`HTTPRoute/app/r - InvalidAnnotation: "1001" is not a whole number 0..1000`}},
		{behaviour: "every invalid annotation is named",
			gateway: gw(), route: withAnnotations(r, PriorityAnnotation, "101", HealthCheckAnnotation, "ping://x"),
			want:    "no steering policy",
			wantRej: []string{`HTTPRoute/app/r - InvalidAnnotation: annotation gatewaydns.io/priority: "101" is not a whole number 0..100; annotation gatewaydns.io/health-check: health check "ping://x"`}},
		{behaviour: "an invalid Gateway annotation is reported on the Gateway; the route's still apply",
			gateway: gw(HealthCheckAnnotation, "tcp://:99999"), route: withAnnotations(r, WeightAnnotation, "5"),
			want:  "weight 5",
			gwRej: []string{"Gateway/app/gw - InvalidAnnotation: annotation gatewaydns.io/health-check"}},
		{behaviour: "external-dns's Route 53 weight, with its set identifier",
			gateway: gw(), route: withAnnotations(r, edns+SetIdentifierAnnotation, "eu1", edns+AWSWeightAnnotation, "90"),
			want: "weight 90"},
		{behaviour: "external-dns's legacy prefix is read too",
			gateway: gw(), route: withAnnotations(r, LegacyAnnotationPrefix+SetIdentifierAnnotation, "eu1", LegacyAnnotationPrefix+AWSWeightAnnotation, "20"),
			want: "weight 20"},
		{behaviour: "a Route 53 weight without a set identifier is no weighted record: not read",
			gateway: gw(), route: withAnnotations(r, edns+AWSWeightAnnotation, "90"), want: "no steering policy"},
		{behaviour: "Route 53 failover roles are tiers: SECONDARY is priority 1",
			gateway: gw(), route: withAnnotations(r, edns+SetIdentifierAnnotation, "us1", edns+AWSFailoverAnnotation, "SECONDARY"),
			want: "priority 1"},
		{behaviour: "PRIMARY is priority 0",
			gateway: gw(), route: withAnnotations(r, edns+SetIdentifierAnnotation, "eu1", edns+AWSFailoverAnnotation, "primary"),
			want: "priority 0"},
		{behaviour: "gatewaydns.io annotations win over the Route 53 forms",
			gateway: gw(), route: withAnnotations(r, edns+SetIdentifierAnnotation, "eu1", edns+AWSWeightAnnotation, "90", WeightAnnotation, "30",
				edns+AWSFailoverAnnotation, "PRIMARY", PriorityAnnotation, "3"),
			want: "weight 30, priority 3"},
		{behaviour: "an unknown failover role is reported",
			gateway: gw(), route: withAnnotations(r, edns+SetIdentifierAnnotation, "eu1", edns+AWSFailoverAnnotation, "TERTIARY"),
			want:    "no steering policy",
			wantRej: []string{`HTTPRoute/app/r - InvalidAnnotation: annotation external-dns.kubernetes.io/aws-failover: "TERTIARY" is neither PRIMARY nor SECONDARY`}},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			cfg := Config{}
			claims, rej := cfg.RouteClaims(tc.route, lookup([]*gatewayv1.Gateway{tc.gateway}), nil)
			assertLines(t, "claims", fmtClaims(claims), []string{"web.apps.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/r"})
			assertLines(t, "policy", policies(claims), []string{"web.apps.example.com: " + tc.want})
			checkRejections(t, rej, tc.wantRej)
			checkRejections(t, cfg.GatewayRejections(tc.gateway), tc.gwRej)
		})
	}
}

func TestRouteThroughTwoGatewaysWithOtherPoliciesIsReported(t *testing.T) {
	a := gwAnnotate(gateway("app", "a", []gatewayv1.Listener{listener("http", HTTP, 80, "*.apps.example.com")}, "10.0.0.1"), PriorityAnnotation, "1")
	b := gwAnnotate(gateway("app", "b", []gatewayv1.Listener{listener("http", HTTP, 80, "*.apps.example.com")}, "10.0.0.2"), PriorityAnnotation, "2")
	same := gwAnnotate(gateway("app", "c", []gatewayv1.Listener{listener("http", HTTP, 80, "*.apps.example.com")}, "10.0.0.3"), PriorityAnnotation, "1")
	gws := lookup([]*gatewayv1.Gateway{a, b, same})
	cfg := Config{}

	r := route(KindHTTPRoute, []string{"web.apps.example.com"}, ref("a"), ref("b"))
	claims, rej := cfg.RouteClaims(r, gws, nil)
	assertLines(t, "policy", policies(claims), []string{"web.apps.example.com: priority 1"})
	checkRejections(t, rej, []string{"HTTPRoute/app/r web.apps.example.com Conflict: Gateways app/a (priority 1) and app/b (priority 2)"})

	claims, rej = cfg.RouteClaims(r2(r, ref("a"), ref("c")), gws, nil)
	assertLines(t, "policy", policies(claims), []string{"web.apps.example.com: priority 1"})
	checkRejections(t, rej, nil)

	// The route's own annotation decides for both: nothing differs.
	claims, rej = cfg.RouteClaims(withAnnotations(r, PriorityAnnotation, "0"), gws, nil)
	assertLines(t, "policy", policies(claims), []string{"web.apps.example.com: priority 0"})
	checkRejections(t, rej, nil)
}

// r2 is r attached to the parents refs instead.
func r2(r Route, refs ...gatewayv1.ParentReference) Route {
	return route(r.Kind, []string{"web.apps.example.com"}, refs...)
}

func TestIngressAndServiceSteering(t *testing.T) {
	cfg := Config{PublishInternal: true}
	claims, rej := cfg.IngressClaims(ingress([]string{"shop.example.com"}, []string{"10.0.0.1"}, WeightAnnotation, "25", HealthCheckAnnotation, "https://shop.example.com/ready"))
	assertLines(t, "ingress", policies(claims), []string{"shop.example.com: weight 25, health check https://shop.example.com:443/ready"})
	checkRejections(t, rej, nil)

	claims, rej = cfg.IngressClaims(ingress([]string{"shop.example.com"}, []string{"10.0.0.1"}, PriorityAnnotation, "x"))
	assertLines(t, "ingress with an invalid annotation: still published", fmtClaims(claims), []string{"shop.example.com -> 10.0.0.1 ttl=0 from Ingress/app/ing"})
	assertLines(t, "without a policy", policies(claims), []string{"shop.example.com: no steering policy"})
	checkRejections(t, rej, []string{`Ingress/app/ing - InvalidAnnotation: annotation gatewaydns.io/priority: "x"`})

	// A NodePort Service's SRV records are not steered; its addresses are.
	svc := service(corev1.ServiceTypeNodePort, AnnotationPrefix+HostnameAnnotation, "np.example.com", PriorityAnnotation, "1")
	svc.Spec.Ports = []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, NodePort: 30080}}
	nodes := ServiceContext{Nodes: func() []*corev1.Node { return []*corev1.Node{node("n1", false, "ext:203.0.113.1")} }}
	claims, rej = cfg.ServiceClaims(svc, nodes)
	assertLines(t, "service", policies(claims), []string{"_svc._tcp.np.example.com: no steering policy", "np.example.com: priority 1"})
	checkRejections(t, rej, nil)
}

func TestDNSEndpointSteering(t *testing.T) {
	a := func(kv ...string) DNSEndpointEntry {
		e := entry("app.example.com", "A", 0, "192.0.2.1")
		for i := 0; i+1 < len(kv); i += 2 {
			if name, ok := strings.CutPrefix(kv[i], "label:"); ok {
				if e.Labels == nil {
					e.Labels = map[string]string{}
				}
				e.Labels[name] = kv[i+1]
				continue
			}
			if kv[i] == "setIdentifier" {
				e.SetIdentifier = kv[i+1]
				continue
			}
			e.ProviderSpecific = append(e.ProviderSpecific, ProviderSpecificProperty{Name: kv[i], Value: kv[i+1]})
		}
		return e
	}
	for _, tc := range []struct {
		behaviour string
		annots    map[string]string
		entries   []DNSEndpointEntry
		want      []string // policies
		wantRej   []string
	}{
		{behaviour: "no properties: no policy", entries: []DNSEndpointEntry{a()}, want: []string{"app.example.com: no steering policy"}},
		{behaviour: "providerSpecific properties under the annotation names",
			entries: []DNSEndpointEntry{a(WeightAnnotation, "90", PriorityAnnotation, "1", HealthCheckAnnotation, "tcp://:443")},
			want:    []string{"app.example.com: weight 90, priority 1, health check tcp://:443"}},
		{behaviour: "labels, when no property says it",
			entries: []DNSEndpointEntry{a("label:"+WeightAnnotation, "5", "label:"+PriorityAnnotation, "2", PriorityAnnotation, "3")},
			want:    []string{"app.example.com: weight 5, priority 3"}},
		{behaviour: "external-dns's Route 53 weighted record: setIdentifier and aws/weight",
			entries: []DNSEndpointEntry{a("setIdentifier", "eu1", AWSWeightProperty, "90")},
			want:    []string{"app.example.com: weight 90"}},
		{behaviour: "a Route 53 failover record: aws/failover SECONDARY",
			entries: []DNSEndpointEntry{a("setIdentifier", "us1", AWSFailoverProperty, "SECONDARY")},
			want:    []string{"app.example.com: priority 1"}},
		{behaviour: "aws/weight without a set identifier is not read",
			entries: []DNSEndpointEntry{a(AWSWeightProperty, "90")},
			want:    []string{"app.example.com: no steering policy"}},
		{behaviour: "the DNSEndpoint's annotations are the default of its entries",
			annots:  map[string]string{PriorityAnnotation: "2", WeightAnnotation: "1"},
			entries: []DNSEndpointEntry{a(WeightAnnotation, "9")},
			want:    []string{"app.example.com: weight 9, priority 2"}},
		{behaviour: "an invalid property: reported, the entry published without its own policy",
			annots:  map[string]string{PriorityAnnotation: "2"},
			entries: []DNSEndpointEntry{a(WeightAnnotation, "-1")},
			want:    []string{"app.example.com: priority 2"},
			wantRej: []string{`DNSEndpoint/app/e app.example.com InvalidAnnotation: spec.endpoints[0] providerSpecific gatewaydns.io/weight: "-1" is not a whole number 0..1000`}},
		{behaviour: "an invalid DNSEndpoint annotation is reported once",
			annots:  map[string]string{HealthCheckAnnotation: "tcp://x:1"},
			entries: []DNSEndpointEntry{a(), entry("other.example.com", "A", 0, "192.0.2.2")},
			want:    []string{"app.example.com: no steering policy", "other.example.com: no steering policy"},
			wantRej: []string{"DNSEndpoint/app/e - InvalidAnnotation: annotation gatewaydns.io/health-check"}},
		{behaviour: "a TXT entry is not steered, and is told so",
			entries: []DNSEndpointEntry{{DNSName: "app.example.com", RecordType: "TXT", Targets: []string{"x"}, ProviderSpecific: []ProviderSpecificProperty{{Name: WeightAnnotation, Value: "1"}}}},
			want:    []string{"app.example.com: no steering policy"},
			wantRej: []string{"DNSEndpoint/app/e app.example.com InvalidAnnotation: only A, AAAA and CNAME records are steered"}},
		{behaviour: "an A and an AAAA entry of one name: one policy, field by field",
			entries: []DNSEndpointEntry{a(WeightAnnotation, "9"), {DNSName: "app.example.com", RecordType: "AAAA", Targets: []string{"2001:db8::1"},
				ProviderSpecific: []ProviderSpecificProperty{{Name: PriorityAnnotation, Value: "1"}}}},
			want: []string{"app.example.com: weight 9, priority 1", "app.example.com: weight 9, priority 1"}},
		{behaviour: "weighted entries of one name within one cluster: the first entry's weight, the other reported",
			entries: []DNSEndpointEntry{a("setIdentifier", "blue", AWSWeightProperty, "90"), {DNSName: "app.example.com", RecordType: "A", Targets: []string{"192.0.2.9"},
				SetIdentifier: "green", ProviderSpecific: []ProviderSpecificProperty{{Name: AWSWeightProperty, Value: "10"}}}},
			want:    []string{"app.example.com: weight 90", "app.example.com: weight 90"},
			wantRej: []string{"DNSEndpoint/app/e app.example.com Conflict: steering: weight 10 differs from weight 90 (set by spec.endpoints[0]) in spec.endpoints[1]"}},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			d := dnsEndpoint("e", 0, tc.entries...)
			d.Annotations = tc.annots
			claims, rej := (&Config{}).DNSEndpointClaims(d)
			assertLines(t, "policies", policies(claims), tc.want)
			checkRejections(t, rej, tc.wantRej)
			if c := d.DeepCopyObject().(*DNSEndpoint); len(tc.entries) > 0 {
				c.Spec.Endpoints[0].ProviderSpecific = append(c.Spec.Endpoints[0].ProviderSpecific, ProviderSpecificProperty{Name: "x"})
				if c.Spec.Endpoints[0].Labels != nil {
					c.Spec.Endpoints[0].Labels["x"] = "y"
				}
				if slices.ContainsFunc(d.Spec.Endpoints[0].ProviderSpecific, func(p ProviderSpecificProperty) bool { return p.Name == "x" }) || d.Spec.Endpoints[0].Labels["x"] != "" {
					t.Error("DeepCopyObject shares providerSpecific or labels")
				}
			}
		})
	}
}

func TestOneClusterPublishesANameWithOnePolicy(t *testing.T) {
	claim := func(name string, age int, p Policy, targets ...string) Claim {
		return Claim{Name: "app.example.com", Targets: targets, Source: record.ObjectRef{Kind: KindHTTPRoute, Namespace: "app", Name: name},
			Created: t0.Add(time.Duration(age) * -time.Hour), Policy: p}
	}
	w := func(n int) Policy { return Policy{Weight: n, HasWeight: true} }
	prio := func(n int) Policy { return Policy{Priority: n, HasPriority: true} }
	for _, tc := range []struct {
		behaviour string
		claims    []Claim
		want      record.Steering
		wantRej   []string
	}{
		{behaviour: "no policy anywhere",
			claims: []Claim{claim("a", 2, Policy{}, "10.0.0.1"), claim("b", 1, Policy{}, "10.0.0.2")}},
		{behaviour: "an object without a policy takes no part: the other's holds",
			claims: []Claim{claim("old", 2, Policy{}, "10.0.0.1"), claim("young", 1, w(90), "10.0.0.1")},
			want:   record.Steering{Weight: 90, Weighted: true}},
		{behaviour: "fields set by different objects add up",
			claims: []Claim{claim("old", 2, prio(1), "10.0.0.1"), claim("young", 1, w(90), "10.0.0.1")},
			want:   record.Steering{Weight: 90, Weighted: true, Priority: 1}},
		{behaviour: "the same value twice is no conflict",
			claims: []Claim{claim("old", 2, w(90), "10.0.0.1"), claim("young", 1, w(90), "10.0.0.2")},
			want:   record.Steering{Weight: 90, Weighted: true}},
		{behaviour: "another value: the oldest object's, the younger reported",
			claims:  []Claim{claim("young", 1, w(10), "10.0.0.1"), claim("old", 2, w(90), "10.0.0.1")},
			want:    record.Steering{Weight: 90, Weighted: true},
			wantRej: []string{"HTTPRoute/app/young app.example.com Conflict: steering: weight 10 differs from weight 90 (set by HTTPRoute/app/old, the oldest object that sets it)"}},
		{behaviour: "a claim that lost the CNAME rule takes no part",
			claims:  []Claim{claim("addr", 1, w(90), "10.0.0.1"), claim("alias", 2, w(10), "lb.example.net")},
			want:    record.Steering{Weight: 90, Weighted: true},
			wantRej: []string{"HTTPRoute/app/alias app.example.com Conflict: CNAME target lb.example.net conflicts with the A/AAAA records"}},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			eps, rej := Merge(tc.claims)
			if len(eps) != 1 || eps[0].Steering != tc.want {
				t.Fatalf("endpoints %+v, want one with steering %+v", eps, tc.want)
			}
			checkRejections(t, rej, tc.wantRej)

			// The same through Desired, object by object, in any order.
			d := NewDesired()
			for _, c := range slices.Backward(tc.claims) {
				d.Set(c.Source, []Claim{c})
			}
			ep, _ := d.Endpoint("app.example.com")
			if ep.Steering != tc.want {
				t.Errorf("Desired: steering %+v, want %+v", ep.Steering, tc.want)
			}
			checkRejections(t, d.Conflicts(), tc.wantRej)
		})
	}
}

func TestDesiredSeesAChangedPolicy(t *testing.T) {
	d := NewDesired()
	ref := record.ObjectRef{Kind: KindIngress, Namespace: "app", Name: "ing"}
	c := Claim{Name: "app.example.com", Targets: []string{"10.0.0.1"}, Created: t0}
	d.Set(ref, []Claim{c})
	c.Policy = Policy{Weight: 10, HasWeight: true}
	if changed := d.Set(ref, []Claim{c}); !slices.Equal(changed, []string{"app.example.com"}) {
		t.Fatalf("a new policy changed %v", changed)
	}
	if ep, _ := d.Endpoint("app.example.com"); ep.Steering != (record.Steering{Weight: 10, Weighted: true}) {
		t.Fatalf("endpoint steering %+v", ep.Steering)
	}
	if changed := d.Set(ref, []Claim{c}); len(changed) != 0 {
		t.Fatalf("the same policy again changed %v", changed)
	}
	c.Policy = Policy{}
	if changed := d.Set(ref, []Claim{c}); len(changed) != 1 {
		t.Fatalf("a policy removed changed %v", changed)
	}
	if ep, _ := d.Endpoint("app.example.com"); !ep.Steering.IsZero() {
		t.Fatalf("endpoint steering %+v after the policy was removed", ep.Steering)
	}
}

// FuzzSteeringAnnotations: whatever the annotations hold, the name is published; a policy
// that is read is one every reader takes back as it was written, and one that is not is
// reported.
func FuzzSteeringAnnotations(f *testing.F) {
	for _, s := range [][3]string{
		{"90", "1", "tcp://:443"}, {"0", "0", "http://:8080/healthz"}, {"1001", "x", "ftp://"},
		{" 5", "100", "https://[2001:db8::1]/ready?x=%20"}, {"", "", ""}, {"+3", "-0", "HTTP://A.example.com"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	gw := lookup([]*gatewayv1.Gateway{appsGW()})
	cfg := Config{}
	f.Fuzz(func(t *testing.T, weight, priority, check string) {
		r := withAnnotations(route(KindHTTPRoute, []string{"web.apps.example.com"}, ref("gw")),
			WeightAnnotation, weight, PriorityAnnotation, priority, HealthCheckAnnotation, check)
		claims, rej := cfg.RouteClaims(r, gw, nil)
		if len(claims) != 1 || len(claims[0].Targets) != 1 {
			t.Fatalf("the name is not published: %v", claims)
		}
		p := claims[0].Policy
		if p.IsZero() != (len(rej) > 0) {
			t.Fatalf("policy %v with rejections %v", p, rejectionsSaying(rej))
		}
		ep := record.Endpoint{Name: "web.apps.example.com", Targets: claims[0].Targets, Steering: p.Steering()}
		v, err := record.Decode(record.Key("skydns", ep.Name, "o", ep.Targets[0]), record.NewValue(ep, "o", ep.Targets[0]).Encode())
		if err != nil || v.Steering != ep.Steering || v.SteeringIgnored != "" {
			t.Fatalf("policy %v reads back as %+v, %q, %v", p, v.Steering, v.SteeringIgnored, err)
		}
	})
}
