package gatewaydns

import (
	"slices"
	"strings"
	"testing"

	"github.com/coredns/caddy"
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
				if c.prefix != "skydns" || !slices.Equal(c.etcd.Endpoints, []string{"http://localhost:2379"}) || c.minLeaseTTL != 30 || c.maxLeaseTTL != 86400 || c.fall != nil {
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
				no_apex_fallback
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
				if !slices.Equal(c.fall, []string{"in-addr.arpa"}) || c.minLeaseTTL != 60 || c.maxLeaseTTL != 3600 || !c.noApexFallback {
					t.Errorf("%+v", c)
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
		{name: "unknown option names itself and its line", input: "gatewaydns {\n endpoint http://e:2379\n bogus 1\n}", wantErr: "Testfile:3 - Error during parsing: unknown property 'bogus'"},
		{name: "endpoint without URL", input: "gatewaydns {\n endpoint\n}", wantErr: "Testfile:2 - Error during parsing: endpoint needs at least one URL"},
		{name: "path with two arguments", input: "gatewaydns {\n path a b\n}", wantErr: "path needs exactly one argument"},
		{name: "credentials need user and password", input: "gatewaydns {\n credentials user\n}", wantErr: "credentials needs 2 arguments"},
		{name: "bad lease ttl", input: "gatewaydns {\n min-lease-ttl soon\n}", wantErr: `invalid min-lease-ttl "soon"`},
		{name: "negative lease ttl", input: "gatewaydns {\n max-lease-ttl -5s\n}", wantErr: "out of range"},
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
