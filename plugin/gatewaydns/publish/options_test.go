package publish

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/txtregistry"
)

// parseLines reads option lines as a stanza for openmcp.cluster holds them (words split on
// spaces, as Corefile tokens are), then finishes the configuration.
func parseLines(t *testing.T, lines ...string) (*Config, error) {
	t.Helper()
	c := NewConfig()
	for _, line := range lines {
		words := strings.Fields(line)
		known, err := c.Parse(words[0], words[1:])
		if err != nil {
			return nil, err
		}
		if !known {
			t.Fatalf("%q is not a publish option", words[0])
		}
	}
	return c, c.Finish(Stanza{Server: "dns://:53", Zones: []string{"openmcp.cluster."}})
}

func TestParseEveryOption(t *testing.T) {
	c, err := parseLines(t,
		"owner landscape.ns.eu1",
		"policy upsert-only",
		"conflict exclusive",
		"lease 1m",
		"dry-run",
		"kubeconfig /etc/kube/config admin@eu1",
		"domain-filter eu1.openmcp.cluster",
		"exclude-domains internal.eu1.openmcp.cluster",
		"namespaces team-a team-b",
		"label-filter dns=public",
		"annotation-filter expose in (yes,true)",
		"gateway-classes istio",
		"gateway-name public",
		"gateway-namespace infra",
		"gateway-label-filter dns in (public, both)",
		"ingress-classes nginx",
		"controller gatewaydns",
		"ttl 2m",
		"base-domain-from-gateway",
		"sources gateway-httproute gateway-tlsroute ingress service",
		"service-types LoadBalancer NodePort",
		"publish-internal-services",
		"annotation-prefix dns.example.org/ external-dns.alpha.kubernetes.io/",
		"txt-owner-id legacy-eu1",
		"txt-prefix reg-%{record_type}.",
		"txt-wildcard-replacement wild",
	)
	if err != nil {
		t.Fatal(err)
	}
	if c.Owner != "landscape.ns.eu1" || c.Policy != plan.UpsertOnly || c.Conflicts != plan.Exclusive || c.Lease != time.Minute || !c.DryRun {
		t.Errorf("writer options %+v", c)
	}
	if !slices.Equal(c.Kinds, []string{"HTTPRoute", "TLSRoute", "Ingress", "Service"}) {
		t.Errorf("sources %v", c.Kinds)
	}
	if c.Kubeconfig != "/etc/kube/config" || c.Kubecontext != "admin@eu1" {
		t.Errorf("kubeconfig %q context %q", c.Kubeconfig, c.Kubecontext)
	}
	if r := c.Registry; r == nil || *r != (txtregistry.Config{Owner: "legacy-eu1", Prefix: "reg-%{record_type}.", WildcardReplacement: "wild"}) {
		t.Errorf("registry %+v", r)
	}
	checkSourceOptions(t, c.Source)
}

// checkSourceOptions checks the source options TestParseEveryOption gives.
func checkSourceOptions(t *testing.T, s source.Config) {
	t.Helper()
	if !slices.Equal(s.Namespaces, []string{"team-a", "team-b"}) || !slices.Equal(s.GatewayClasses, []string{"istio"}) || !slices.Equal(s.IngressClasses, []string{"nginx"}) {
		t.Errorf("filters %+v", s)
	}
	if !slices.Equal(s.ServiceTypes, []corev1.ServiceType{"LoadBalancer", "NodePort"}) || !s.PublishInternal {
		t.Errorf("service filters %v %v", s.ServiceTypes, s.PublishInternal)
	}
	if !slices.Equal(s.AnnotationPrefixes, []string{"dns.example.org/", "external-dns.alpha.kubernetes.io/"}) {
		t.Errorf("annotation prefixes %v", s.AnnotationPrefixes)
	}
	if s.ControllerName != "gatewaydns" || s.DefaultTTL != 120 || !s.BaseDomainFromGateway {
		t.Errorf("%+v", s)
	}
	if !s.LabelSelector.Matches(labels.Set{"dns": "public"}) || s.LabelSelector.Matches(labels.Set{"dns": "private"}) {
		t.Errorf("label filter %v", s.LabelSelector)
	}
	if !s.AnnotationFilter.Matches(labels.Set{"expose": "yes"}) || s.AnnotationFilter.Matches(labels.Set{}) {
		t.Errorf("annotation filter %v", s.AnnotationFilter)
	}
	if s.GatewayName != "public" || s.GatewayNamespace != "infra" ||
		!s.GatewayLabelSelector.Matches(labels.Set{"dns": "both"}) || s.GatewayLabelSelector.Matches(labels.Set{"dns": "private"}) {
		t.Errorf("gateway filters %q %q %v", s.GatewayName, s.GatewayNamespace, s.GatewayLabelSelector)
	}
	if !s.DomainFilter.Match("app.eu1.openmcp.cluster") || s.DomainFilter.Match("app.us1.openmcp.cluster") || s.DomainFilter.Match("x.internal.eu1.openmcp.cluster") {
		t.Errorf("domain filter %+v", s.DomainFilter)
	}
}

func TestParseRefusesWhatExternalDNSRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lines   []string
		wantErr string
	}{
		{"owner with a slash", []string{"owner eu/1"}, `owner "eu/1" may not contain`},
		{"owner with two words", []string{"owner eu 1"}, "owner needs exactly one argument"},
		{"unknown policy", []string{"owner eu1", "policy sometimes"}, "sometimes"},
		{"unknown conflict mode", []string{"owner eu1", "conflict maybe"}, "maybe"},
		{"lease too short to outlive a failover", []string{"owner eu1", "lease 6s"}, "lease 6s is shorter than the election TTL 2s plus 5s"},
		{"dry-run takes no argument", []string{"owner eu1", "dry-run yes"}, "dry-run takes no arguments"},
		{"kubeconfig with three arguments", []string{"owner eu1", "kubeconfig a b c"}, "kubeconfig needs a file"},
		{"bad label selector", []string{"owner eu1", "label-filter a=(b"}, `label-filter "a=(b"`},
		{"gateway-label-filter without a selector", []string{"owner eu1", "gateway-label-filter"}, "gateway-label-filter needs at least one argument"},
		{"unknown source names the known ones", []string{"owner eu1", "sources gateway-httproute pod"},
			`unknown source "pod", want some of crd, gateway-grpcroute, gateway-httproute, gateway-tcproute, gateway-tlsroute, gateway-udproute, ingress, service`},
		{"unknown service type", []string{"owner eu1", "service-types LoadBalancer Headless"}, `unknown service type "Headless"`},
		{"publish-internal-services takes no argument", []string{"owner eu1", "publish-internal-services yes"}, "publish-internal-services takes no arguments"},
		{"zero ttl", []string{"owner eu1", "ttl 0"}, "a TTL must be 1..4294967295 seconds"},
		{"ttl that is no duration", []string{"owner eu1", "ttl soon"}, "want seconds or a duration"},
		{"txt-owner-id takes one argument", []string{"owner eu1", "txt-owner-id"}, "txt-owner-id needs exactly one argument"},
		{"annotation-prefix needs a prefix", []string{"owner eu1", "annotation-prefix"}, "annotation-prefix needs at least one argument"},
		{"annotation-prefix must end with a slash", []string{"owner eu1", "annotation-prefix dns.example.org"}, `annotation-prefix "dns.example.org" must end with '/'`},
		{"annotation-prefix must be a DNS subdomain", []string{"owner eu1", "annotation-prefix Bad_Prefix/"}, `annotation-prefix "Bad_Prefix/": Bad_Prefix is not a DNS subdomain`},
		{"publishing needs an owner", []string{"domain-filter eu1.openmcp.cluster"}, "publishing needs 'owner ID'"},
		{"txt-prefix without txt-owner-id", []string{"owner eu1", "txt-prefix reg-"}, "'txt-owner-id ID', which is missing"},
		{"txt-prefix and txt-suffix together", []string{"owner eu1", "txt-owner-id eu1", "txt-prefix p-", "txt-suffix -s"}, "mutually exclusive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseLines(t, tc.lines...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseDefaultsAndAccumulation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		check func(t *testing.T, c *Config)
	}{
		{"sync, shared, no lease, external-dns's controller, the zones as domain filter", []string{"owner eu1"}, func(t *testing.T, c *Config) {
			if c.Policy != plan.Sync || c.Conflicts != plan.Shared || c.Lease != 0 || c.Source.ControllerName != DefaultController || c.Registry != nil {
				t.Errorf("%+v", c)
			}
			if !c.Source.DomainFilter.Match("app.eu1.openmcp.cluster") || c.Source.DomainFilter.Match("example.com") {
				t.Error("the zones are not the default domain filter")
			}
		}},
		{"crd is a source to name", []string{"owner eu1", "sources crd ingress"}, func(t *testing.T, c *Config) {
			if !slices.Equal(c.Kinds, []string{"DNSEndpoint", "Ingress"}) {
				t.Errorf("sources %v", c.Kinds)
			}
		}},
		{"sources and service-types given twice add up", []string{"owner eu1", "sources ingress", "sources service", "service-types NodePort", "service-types ClusterIP"}, func(t *testing.T, c *Config) {
			if !slices.Equal(c.Kinds, []string{"Ingress", "Service"}) || !slices.Equal(c.Source.ServiceTypes, []corev1.ServiceType{"NodePort", "ClusterIP"}) {
				t.Errorf("sources %v, service types %v", c.Kinds, c.Source.ServiceTypes)
			}
		}},
		{"a ttl in seconds", []string{"owner eu1", "ttl 30"}, func(t *testing.T, c *Config) {
			if c.Source.DefaultTTL != 30 {
				t.Errorf("ttl %d", c.Source.DefaultTTL)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseLines(t, tc.lines...)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestParseLeavesOtherOptionsAlone(t *testing.T) {
	c := NewConfig()
	for _, opt := range []string{"endpoint", "path", "tls", "publish-only", "notify", "soa"} {
		if known, err := c.Parse(opt, []string{"x"}); known || err != nil {
			t.Errorf("%s: known %v, err %v; want it left to the serve role", opt, known, err)
		}
	}
}

// One owner, one stanza: a second stanza of the owner in the same Corefile is refused, and
// says where the first one is.
func TestOwnersClaimOnce(t *testing.T) {
	owners := Owners{}
	if err := owners.Claim("eu1", "Corefile:4"); err != nil {
		t.Fatal(err)
	}
	if err := owners.Claim("us1", "Corefile:9"); err != nil {
		t.Fatalf("another owner: %v", err)
	}
	err := owners.Claim("eu1", "Corefile:11")
	if err == nil || !strings.Contains(err.Error(), `owner "eu1" is already published by the stanza at Corefile:4`) {
		t.Fatalf("second claim of eu1: %v", err)
	}
}
