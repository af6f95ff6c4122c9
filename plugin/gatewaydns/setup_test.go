package gatewaydns

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/txtregistry"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		check   func(t *testing.T, c *config)
		wantErr string
	}{
		{
			name:  "defaults are the stock etcd plugin's",
			input: "gatewaydns",
			check: func(t *testing.T, c *config) {
				if c.prefix != "skydns" || !slices.Equal(c.etcd.Endpoints, []string{"http://localhost:2379"}) || c.minLeaseTTL != 30 || c.maxLeaseTTL != 86400 || c.negativeTTL != 30 || c.fall != nil || c.exactNames {
					t.Errorf("defaults: %+v", c)
				}
				if !slices.Equal(c.zones, []string{"example.org."}) {
					t.Errorf("zones default to the server block's: %v", c.zones)
				}
			},
		},
		{
			name: "every stock option",
			input: `gatewaydns openmcp.cluster 10.in-addr.arpa {
				endpoint http://e1:2379 http://e2:2379
				path /dns
				credentials user secret
				fallthrough in-addr.arpa
				min-lease-ttl 1m
				max-lease-ttl 3600
				negative-ttl 5s
				no_apex_fallback
				explain
			}`,
			check: func(t *testing.T, c *config) {
				if !slices.Equal(c.zones, []string{"openmcp.cluster.", "10.in-addr.arpa."}) {
					t.Errorf("zones %v", c.zones)
				}
				if !slices.Equal(c.etcd.Endpoints, []string{"http://e1:2379", "http://e2:2379"}) || c.prefix != "/dns" {
					t.Errorf("endpoints %v path %q", c.etcd.Endpoints, c.prefix)
				}
				if c.etcd.Username != "user" || c.etcd.Password != "secret" {
					t.Errorf("credentials %q %q", c.etcd.Username, c.etcd.Password)
				}
				if !slices.Equal(c.fall, []string{"in-addr.arpa"}) || c.minLeaseTTL != 60 || c.maxLeaseTTL != 3600 || c.negativeTTL != 5 || !c.noApexFallback || !c.explain {
					t.Errorf("%+v", c)
				}
			},
		},
		{
			name:  "lease-grace defaults to 5s and takes a duration or 0",
			input: "gatewaydns {\n lease-grace 0\n}",
			check: func(t *testing.T, c *config) {
				if c.leaseGrace != 0 {
					t.Errorf("lease-grace 0 gave %s", c.leaseGrace)
				}
				if d := mustParse(t, "gatewaydns").leaseGrace; d != 5*time.Second {
					t.Errorf("default lease-grace %s, want 5s", d)
				}
			},
		},
		{
			name:  "exact-names turns exact names on",
			input: "gatewaydns {\n exact-names\n}",
			check: func(t *testing.T, c *config) {
				if !c.exactNames {
					t.Error("exact-names did not turn exact names on")
				}
			},
		},
		{
			name:  "fallthrough without zones means every zone",
			input: "gatewaydns {\n fallthrough\n}",
			check: func(t *testing.T, c *config) {
				if c.fall == nil || len(c.fall) != 0 {
					t.Errorf("fall %#v", c.fall)
				}
			},
		},
		{
			name:  "options the stock plugin ignores are accepted",
			input: "gatewaydns {\n stubzones\n debug\n upstream 8.8.8.8\n}",
		},
		{
			name: "publishing options",
			input: `gatewaydns openmcp.cluster {
				owner landscape.ns.eu1
				policy upsert-only
				conflict exclusive
				lease 1m
				dry-run
				kubeconfig /etc/kube/config admin@eu1
				domain-filter eu1.openmcp.cluster
				exclude-domains internal.eu1.openmcp.cluster
				namespaces team-a team-b
				label-filter dns=public
				annotation-filter expose in (yes,true)
				gateway-classes istio
				gateway-name public
				gateway-namespace infra
				gateway-label-filter dns in (public, both)
				ingress-classes nginx
				controller gatewaydns
				ttl 2m
				base-domain-from-gateway
				sources gateway-httproute gateway-tlsroute ingress service
				service-types LoadBalancer NodePort
				publish-internal-services
				annotation-prefix dns.example.org/ external-dns.alpha.kubernetes.io/
			}`,
			check: func(t *testing.T, c *config) {
				p := c.publish
				if p == nil || c.publishOnly {
					t.Fatalf("publish %+v, publishOnly %v", p, c.publishOnly)
				}
				if p.owner != "landscape.ns.eu1" || p.policy != plan.UpsertOnly || p.conflicts != plan.Exclusive || p.lease != time.Minute || !p.dryRun {
					t.Errorf("%+v", p)
				}
				if !slices.Equal(p.kinds, []string{"HTTPRoute", "TLSRoute", "Ingress", "Service"}) {
					t.Errorf("sources %v", p.kinds)
				}
				if p.kubeconfig != "/etc/kube/config" || p.kubecontext != "admin@eu1" {
					t.Errorf("kubeconfig %q context %q", p.kubeconfig, p.kubecontext)
				}
				s := p.source
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
			},
		},
		{
			name:  "publishing defaults: sync, shared, no lease, external-dns's controller, the zones as domain filter",
			input: "gatewaydns openmcp.cluster {\n owner eu1\n publish-only\n}",
			check: func(t *testing.T, c *config) {
				p := c.publish
				if p == nil || !c.publishOnly || p.policy != plan.Sync || p.conflicts != plan.Shared || p.lease != 0 || p.source.ControllerName != "dns-controller" {
					t.Fatalf("%+v", p)
				}
				if !p.source.DomainFilter.Match("app.eu1.openmcp.cluster") || p.source.DomainFilter.Match("example.com") {
					t.Errorf("zones are not the default domain filter")
				}
			},
		},
		{name: "publishing options without owner", input: "gatewaydns {\n domain-filter eu1.openmcp.cluster\n}", wantErr: "publishing needs 'owner ID'"},
		{name: "publish-only without owner", input: "gatewaydns {\n publish-only\n}", wantErr: "publishing needs 'owner ID'"},
		{name: "unknown policy", input: "gatewaydns {\n owner eu1\n policy sometimes\n}", wantErr: "Testfile:3 - Error during parsing:"},
		{name: "dry-run takes no argument", input: "gatewaydns {\n owner eu1\n dry-run yes\n}", wantErr: "Testfile:3 - Error during parsing: dry-run takes no arguments"},
		{name: "unknown conflict mode", input: "gatewaydns {\n owner eu1\n conflict maybe\n}", wantErr: "Testfile:3"},
		{name: "lease too short to outlive a failover", input: "gatewaydns {\n owner eu1\n lease 14s\n}", wantErr: "Testfile:3 - Error during parsing: lease 14s is shorter than the election TTL 10s plus 5s"},
		{name: "owner with a slash", input: "gatewaydns {\n owner eu/1\n}", wantErr: "may not contain"},
		{name: "bad label selector", input: "gatewaydns {\n owner eu1\n label-filter a=(b\n}", wantErr: "label-filter"},
		{name: "crd is a source to name", input: "gatewaydns {\n owner eu1\n sources crd ingress\n}", check: func(t *testing.T, c *config) {
			if !slices.Equal(c.publish.kinds, []string{"DNSEndpoint", "Ingress"}) {
				t.Errorf("sources %v", c.publish.kinds)
			}
		}},
		{name: "unknown source names the known ones", input: "gatewaydns {\n owner eu1\n sources gateway-httproute pod\n}",
			wantErr: `unknown source "pod", want some of crd, gateway-grpcroute, gateway-httproute, gateway-tcproute, gateway-tlsroute, gateway-udproute, ingress, service`},
		{name: "unknown service type", input: "gatewaydns {\n owner eu1\n service-types LoadBalancer Headless\n}", wantErr: `Testfile:3 - Error during parsing: unknown service type "Headless"`},
		{name: "the TXT registry of external-dns to take over", input: "gatewaydns {\n owner eu1\n txt-owner-id legacy-eu1\n txt-prefix reg-%{record_type}.\n txt-wildcard-replacement wild\n}",
			check: func(t *testing.T, c *config) {
				if r := c.publish.registry; r == nil || *r != (txtregistry.Config{Owner: "legacy-eu1", Prefix: "reg-%{record_type}.", WildcardReplacement: "wild"}) {
					t.Errorf("registry %+v", r)
				}
			}},
		{name: "txt-prefix without txt-owner-id", input: "gatewaydns {\n owner eu1\n txt-prefix reg-\n}", wantErr: "'txt-owner-id ID', which is missing"},
		{name: "txt-prefix and txt-suffix together", input: "gatewaydns {\n owner eu1\n txt-owner-id eu1\n txt-prefix p-\n txt-suffix -s\n}", wantErr: "mutually exclusive"},
		{name: "txt-owner-id takes one argument", input: "gatewaydns {\n owner eu1\n txt-owner-id\n}", wantErr: "Testfile:3 - Error during parsing: txt-owner-id needs exactly one argument"},
		{name: "annotation-prefix needs a prefix", input: "gatewaydns {\n owner eu1\n annotation-prefix\n}", wantErr: "Testfile:3 - Error during parsing: annotation-prefix needs at least one argument"},
		{name: "annotation-prefix must end with a slash", input: "gatewaydns {\n owner eu1\n annotation-prefix dns.example.org\n}", wantErr: "Testfile:3 - Error during parsing: annotation-prefix \"dns.example.org\" must end with '/'"},
		{name: "annotation-prefix must be a DNS subdomain", input: "gatewaydns {\n owner eu1\n annotation-prefix Bad_Prefix/\n}", wantErr: "Testfile:3 - Error during parsing: annotation-prefix \"Bad_Prefix/\": Bad_Prefix is not a DNS subdomain"},
		{name: "publish-internal-services takes no argument", input: "gatewaydns {\n owner eu1\n publish-internal-services yes\n}", wantErr: "publish-internal-services takes no arguments"},
		{name: "zero ttl", input: "gatewaydns {\n owner eu1\n ttl 0\n}", wantErr: "at least 1s"},
		{name: "kubeconfig with three arguments", input: "gatewaydns {\n owner eu1\n kubeconfig a b c\n}", wantErr: "kubeconfig needs a file"},
		{name: "unknown option names itself and its line", input: "gatewaydns {\n endpoint http://e:2379\n bogus 1\n}", wantErr: "Testfile:3 - Error during parsing: unknown property 'bogus'"},
		{name: "endpoint without URL", input: "gatewaydns {\n endpoint\n}", wantErr: "Testfile:2 - Error during parsing: endpoint needs at least one URL"},
		{name: "path with two arguments", input: "gatewaydns {\n path a b\n}", wantErr: "path needs exactly one argument"},
		{name: "credentials need user and password", input: "gatewaydns {\n credentials user\n}", wantErr: "credentials needs 2 arguments"},
		{name: "bad lease ttl", input: "gatewaydns {\n min-lease-ttl soon\n}", wantErr: `invalid min-lease-ttl "soon"`},
		{name: "negative-ttl above what a resolver caches", input: "gatewaydns {\n negative-ttl 10m\n}", wantErr: `Testfile:2 - Error during parsing: invalid negative-ttl "10m": at most 300s`},
		{name: "negative-ttl that is no duration", input: "gatewaydns {\n negative-ttl soon\n}", wantErr: `invalid negative-ttl "soon"`},
		{name: "lease-grace that is no duration", input: "gatewaydns {\n lease-grace forever\n}", wantErr: `Testfile:2 - Error during parsing: invalid lease-grace "forever"`},
		{name: "lease-grace below zero", input: "gatewaydns {\n lease-grace -1s\n}", wantErr: `invalid lease-grace "-1s"`},
		{name: "negative lease ttl", input: "gatewaydns {\n max-lease-ttl -5s\n}", wantErr: "out of range"},
		{name: "exact-names takes no argument", input: "gatewaydns {\n exact-names yes\n}", wantErr: "exact-names takes no arguments"},
		{name: "explain takes no argument", input: "gatewaydns {\n explain all\n}", wantErr: "explain takes no arguments"},
		{name: "no_apex_fallback takes no argument", input: "gatewaydns {\n no_apex_fallback yes\n}", wantErr: "no_apex_fallback takes no arguments"},
		{name: "tls with missing files", input: "gatewaydns {\n tls /nonexistent/cert /nonexistent/key /nonexistent/ca\n}", wantErr: "tls:"},
		{name: "twice in one server block", input: "gatewaydns\ngatewaydns", wantErr: "may be used once per server block"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", tc.input)
			c.ServerBlockKeys = []string{"example.org."}
			cfg, err := parse(c)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, cfg)
			}
		})
	}
}

func TestParseTTL(t *testing.T) {
	for in, want := range map[string]uint32{"30": 30, "30s": 30, "5m": 300, "2h30m": 9000, "0": 0} {
		if got, err := parseTTL(in); err != nil || got != want {
			t.Errorf("parseTTL(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1s", "1e30h"} {
		if _, err := parseTTL(in); err == nil {
			t.Errorf("parseTTL(%q) should fail", in)
		}
	}
}

func TestZonePrefixes(t *testing.T) {
	tests := []struct {
		name   string
		prefix string
		zones  []string
		want   []string
	}{
		{name: "a zone is the reversed path of its labels", prefix: "skydns", zones: []string{"openmcp.cluster."}, want: []string{"/skydns/cluster/openmcp/"}},
		{name: "the root zone is the whole prefix", prefix: "skydns", zones: []string{"."}, want: []string{"/skydns/"}},
		{name: "a zone inside another is covered by it", prefix: "/skydns", zones: []string{"eu1.openmcp.cluster.", "openmcp.cluster."}, want: []string{"/skydns/cluster/openmcp/"}},
		{name: "a sibling whose name starts alike is not inside", prefix: "skydns", zones: []string{"a.test.", "ab.test."}, want: []string{"/skydns/test/a/", "/skydns/test/ab/"}},
		{name: "reverse zones and a custom path", prefix: "/dns/x", zones: []string{"10.in-addr.arpa.", "openmcp.cluster."}, want: []string{"/dns/x/arpa/in-addr/10/", "/dns/x/cluster/openmcp/"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := zonePrefixes(tc.prefix, tc.zones); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// mustParse parses a stanza in a server block for example.org.
func mustParse(t *testing.T, input string) *config {
	t.Helper()
	c := caddy.NewTestController("dns", input)
	c.ServerBlockKeys = []string{"example.org."}
	cfg, err := parse(c)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
