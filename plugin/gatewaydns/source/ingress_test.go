package source

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ingress builds Ingress app/ing with rule hosts and status.loadBalancer entries ("ip" or
// "host:name"), annotated with kv.
func ingress(hosts []string, lb []string, kv ...string) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "ing", CreationTimestamp: metav1.NewTime(t0)}}
	for _, h := range hosts {
		ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{Host: h})
	}
	for _, a := range lb {
		if len(a) > 5 && a[:5] == "host:" {
			ing.Status.LoadBalancer.Ingress = append(ing.Status.LoadBalancer.Ingress, networkingv1.IngressLoadBalancerIngress{Hostname: a[5:]})
		} else {
			ing.Status.LoadBalancer.Ingress = append(ing.Status.LoadBalancer.Ingress, networkingv1.IngressLoadBalancerIngress{IP: a})
		}
	}
	if len(kv) > 0 {
		ing.Annotations = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			ing.Annotations[kv[i]] = kv[i+1]
		}
	}
	return ing
}

func withTLS(ing *networkingv1.Ingress, hosts ...string) *networkingv1.Ingress {
	ing.Spec.TLS = append(ing.Spec.TLS, networkingv1.IngressTLS{Hosts: hosts, SecretName: "cert"})
	return ing
}

func withClass(ing *networkingv1.Ingress, class string) *networkingv1.Ingress {
	ing.Spec.IngressClassName = &class
	return ing
}

func TestIngressClaims(t *testing.T) {
	lb := []string{"10.0.0.1"}
	at := func(targets string, names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, n+" -> "+targets+" ttl=0 from Ingress/app/ing")
		}
		return out
	}
	nginx := Config{IngressClasses: []string{"nginx"}}
	cases := []struct {
		name    string
		cfg     Config
		ing     *networkingv1.Ingress
		want    []string
		wantRej []string
	}{
		{name: "rule hosts are published at the load balancer IP", ing: ingress([]string{"a.example.com", "b.example.com"}, lb), want: at("10.0.0.1", "a.example.com", "b.example.com")},
		{name: "rule without host is not a name", ing: ingress([]string{"", "a.example.com"}, lb), want: at("10.0.0.1", "a.example.com")},
		{name: "tls hosts are published", ing: withTLS(ingress(nil, lb), "t.example.com", "a.example.com"), want: at("10.0.0.1", "a.example.com", "t.example.com")},
		{name: "rule and tls host named twice give one name", ing: withTLS(ingress([]string{"a.example.com"}, lb), "a.example.com"), want: at("10.0.0.1", "a.example.com")},
		{name: "hostname annotation adds names", ing: ingress([]string{"a.example.com"}, lb, AnnotationPrefix+"hostname", "b.example.com,c.example.com"),
			want: at("10.0.0.1", "a.example.com", "b.example.com", "c.example.com")},
		{name: "legacy hostname annotation adds names", ing: ingress(nil, lb, LegacyAnnotationPrefix+"hostname", "b.example.com"), want: at("10.0.0.1", "b.example.com")},
		{name: "wildcard host is published", ing: ingress([]string{"*.example.com"}, lb), want: at("10.0.0.1", "*.example.com")},
		{name: "upper-case hosts are lower-cased", ing: ingress(nil, lb, AnnotationPrefix+"hostname", "MiXeD.Example.com"), want: at("10.0.0.1", "mixed.example.com")},
		{name: "IP literal and non DNS-1123 hosts are rejected", ing: ingress([]string{"a.example.com"}, lb, AnnotationPrefix+"hostname", "192.0.2.1,under_score.example.com"),
			want: at("10.0.0.1", "a.example.com"), wantRej: []string{"Ingress/app/ing 192.0.2.1 InvalidHostname", "Ingress/app/ing under_score.example.com InvalidHostname"}},
		{name: "status ip and hostname are both targets", ing: ingress([]string{"a.example.com"}, []string{"10.0.0.2", "host:lb.example.net", "10.0.0.1"}),
			want: at("10.0.0.1,10.0.0.2,lb.example.net", "a.example.com")},
		{name: "status hostname is a CNAME target", ing: ingress([]string{"a.example.com"}, []string{"host:LB.example.net"}), want: at("lb.example.net", "a.example.com")},
		{name: "status IPv6 is a target", ing: ingress([]string{"a.example.com"}, []string{"2001:db8::10"}), want: at("2001:db8::10", "a.example.com")},
		{name: "target annotation overrides the status", ing: ingress([]string{"a.example.com"}, lb, AnnotationPrefix+"target", "192.0.2.9"), want: at("192.0.2.9", "a.example.com")},
		{name: "legacy target annotation overrides the status", ing: ingress([]string{"a.example.com"}, lb, LegacyAnnotationPrefix+"target", "edge.example.net"), want: at("edge.example.net", "a.example.com")},
		{name: "invalid target annotation entries are rejected", ing: ingress([]string{"a.example.com"}, lb, AnnotationPrefix+"target", "192.0.2.9,bad_target"),
			want: at("192.0.2.9", "a.example.com"), wantRej: []string{"Ingress/app/ing - InvalidTarget"}},
		{name: "Ingress without load balancer status is reported", ing: ingress([]string{"a.example.com"}, nil), wantRej: []string{"Ingress/app/ing - NoTargets"}},
		{name: "ttl annotation sets the TTL", cfg: Config{DefaultTTL: 300}, ing: ingress([]string{"a.example.com"}, lb, AnnotationPrefix+"ttl", "1h"),
			want: []string{"a.example.com -> 10.0.0.1 ttl=3600 from Ingress/app/ing"}},
		{name: "IngressClass filter admits spec.ingressClassName", cfg: nginx, ing: withClass(ingress([]string{"a.example.com"}, lb), "nginx"), want: at("10.0.0.1", "a.example.com")},
		{name: "IngressClass filter leaves out another spec.ingressClassName", cfg: nginx, ing: withClass(ingress([]string{"a.example.com"}, lb), "traefik")},
		{name: "IngressClass filter falls back to the class annotation", cfg: nginx, ing: ingress([]string{"a.example.com"}, lb, IngressClassAnnotation, "nginx"), want: at("10.0.0.1", "a.example.com")},
		{name: "IngressClass filter leaves out another class annotation", cfg: nginx, ing: ingress([]string{"a.example.com"}, lb, IngressClassAnnotation, "traefik")},
		{name: "spec.ingressClassName wins over the class annotation", cfg: nginx, ing: withClass(ingress([]string{"a.example.com"}, lb, IngressClassAnnotation, "nginx"), "traefik")},
		{name: "IngressClass filter leaves out an Ingress without class", cfg: nginx, ing: ingress([]string{"a.example.com"}, lb)},
		{name: "no IngressClass filter admits every class", ing: withClass(ingress([]string{"a.example.com"}, lb), "traefik"), want: at("10.0.0.1", "a.example.com")},
		{name: "an Ingress with every name outside the zones is another controller's: no rejection, not even for its missing address", cfg: Config{DomainFilter: NewDomainFilter([]string{"example.com"}, nil), Zones: NewDomainFilter([]string{"example.com"}, nil)},
			ing: ingress([]string{"a.example.org", "b.example.org"}, nil)},
		{name: "an invalid hostname is reported even on an Ingress with no name in the zones", cfg: Config{DomainFilter: NewDomainFilter([]string{"example.com"}, nil), Zones: NewDomainFilter([]string{"example.com"}, nil)},
			ing: ingress([]string{"a.example.org", "bad_name..example.com"}, lb), wantRej: []string{"Ingress/app/ing bad_name..example.com InvalidHostname"}},
		{name: "domain filter rejects names outside", cfg: Config{DomainFilter: NewDomainFilter([]string{"example.com"}, nil)},
			ing: ingress([]string{"a.example.com", "a.example.org"}, lb), want: at("10.0.0.1", "a.example.com"), wantRej: []string{"Ingress/app/ing a.example.org DomainFilter"}},
		{name: "controller annotation naming another controller is skipped", cfg: Config{ControllerName: "gatewaydns"},
			ing: ingress([]string{"a.example.com"}, lb, AnnotationPrefix+"controller", "dns-controller")},
		{name: "namespace filter leaves out other namespaces", cfg: Config{Namespaces: []string{"prod"}}, ing: ingress([]string{"a.example.com"}, lb)},
		{name: "label selector leaves out other Ingresses", cfg: Config{LabelSelector: mustSelector("dns=yes")}, ing: ingress([]string{"a.example.com"}, lb)},
		{name: "annotation filter admits matching Ingresses", cfg: Config{AnnotationFilter: mustSelector("dns=yes")},
			ing: ingress([]string{"a.example.com"}, lb, "dns", "yes"), want: at("10.0.0.1", "a.example.com")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claims, rej := tc.cfg.IngressClaims(tc.ing)
			assertLines(t, "claims", fmtClaims(claims), tc.want)
			assertLines(t, "rejections", fmtRejections(rej), tc.wantRej)
		})
	}
}
