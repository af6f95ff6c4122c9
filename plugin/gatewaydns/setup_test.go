package gatewaydns

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
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
			name:  "publishing defaults: sync, shared, no lease, external-dns's controller, the zones as domain filter",
			input: "gatewaydns openmcp.cluster {\n owner eu1\n publish-only\n}",
			check: func(t *testing.T, c *config) {
				p := c.publish
				if p == nil || !c.publishOnly || p.Policy != plan.Sync || p.Conflicts != plan.Shared || p.Lease != 0 || p.Source.ControllerName != "dns-controller" {
					t.Fatalf("%+v", p)
				}
				if !p.Source.DomainFilter.Match("app.eu1.openmcp.cluster") || p.Source.DomainFilter.Match("example.com") {
					t.Errorf("zones are not the default domain filter")
				}
			},
		},
		{name: "publishing options without owner", input: "gatewaydns {\n domain-filter eu1.openmcp.cluster\n}", wantErr: "publishing needs 'owner ID'"},
		{name: "publish-only without owner", input: "gatewaydns {\n publish-only\n}", wantErr: "publishing needs 'owner ID'"},
		{name: "unknown policy", input: "gatewaydns {\n owner eu1\n policy sometimes\n}", wantErr: "Testfile:3 - Error during parsing:"},
		{name: "txt-prefix without txt-owner-id", input: "gatewaydns {\n owner eu1\n txt-prefix reg-\n}", wantErr: "'txt-owner-id ID', which is missing"},
		{name: "txt-prefix and txt-suffix together", input: "gatewaydns {\n owner eu1\n txt-owner-id eu1\n txt-prefix p-\n txt-suffix -s\n}", wantErr: "mutually exclusive"},
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

// The options of zone transfers and NOTIFYs (package xfr) read in the stanza: their values, and
// errors that name the line.
func TestTheNotifyOptionsNameTheSecondariesAndTheKey(t *testing.T) {
	for _, tc := range []struct {
		stanza  string
		want    string
		wantErr string
	}{
		{"notify 127.0.0.1:5300 10.0.0.1\nnotify 10.0.0.2 10.0.0.1", "[127.0.0.1:5300 10.0.0.1:53 10.0.0.2:53] <nil> ", ""},
		{"notify 10.0.0.1\nnotify-source 127.0.0.2\nnotify-key Key.Example", "[10.0.0.1:53] 127.0.0.2 key.example.", ""},
		{"notify", "", "notify needs the secondaries' ADDRESSes"},
		{"notify-source nowhere", "", "notify-source needs one IP address"},
		{"notify-key", "", "notify-key needs the NAME"},
	} {
		cfg, err := parse(caddy.NewTestController("dns", "gatewaydns zone.test {\n"+tc.stanza+"\n}"))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "Testfile:") {
				t.Errorf("%q: error %v, want one naming the line and saying %q", tc.stanza, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.stanza, err)
		}
		if got := fmt.Sprintf("%v %v %s", cfg.xfr.Notify, cfg.xfr.NotifySource, cfg.xfr.NotifyKey); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.stanza, got, tc.want)
		}
	}
}

// TestTheCatalogIsServedByTheBlockAndListsTheOtherZones: the catalog option takes its zone out
// of the stanza's zones (the block's, by default), which it lists; a catalog the block does not
// serve, one inside a member zone, or one with nothing to list is refused, naming the line.
func TestTheCatalogIsServedByTheBlockAndListsTheOtherZones(t *testing.T) {
	for _, tc := range []struct {
		keys    []string
		stanza  string
		members string
		wantErr string
	}{
		{[]string{"openmcp.cluster.", "second.test.", "catalog.invalid."}, "gatewaydns {\ncatalog Catalog.Invalid\n}", "[openmcp.cluster. second.test.]", ""},
		{[]string{"openmcp.cluster.", "invalid."}, "gatewaydns openmcp.cluster {\ncatalog catalog.invalid\n}", "[openmcp.cluster.]", ""},
		{[]string{"openmcp.cluster."}, "gatewaydns {\ncatalog catalog.invalid\n}", "", "the server block does not serve it"},
		{[]string{"openmcp.cluster."}, "gatewaydns {\ncatalog catalog.openmcp.cluster\n}", "", "inside the zone openmcp.cluster."},
		{[]string{"catalog.invalid."}, "gatewaydns {\ncatalog catalog.invalid\n}", "", "no zone left"},
		{[]string{"openmcp.cluster."}, "gatewaydns {\ncatalog\n}", "", "catalog needs the NAME"},
	} {
		c := caddy.NewTestController("dns", tc.stanza)
		c.ServerBlockKeys = tc.keys
		cfg, err := parse(c)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "Testfile:") {
				t.Errorf("%v %q: error %v, want one naming the line and saying %q", tc.keys, tc.stanza, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v %q: %v", tc.keys, tc.stanza, err)
		}
		st := newStanza(cfg)
		if got := fmt.Sprint(st.catalog.Members); got != tc.members || fmt.Sprint(cfg.zones) != tc.members {
			t.Errorf("%v %q: the catalog lists %s, the stanza serves %v; want %s", tc.keys, tc.stanza, got, cfg.zones, tc.members)
		}
	}
}
