package plugincfg

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/core/dnsserver"
)

// The stock module's dnsserver.Directives is its own plugin.cfg order: ours must be exactly
// that, with gatewaydns inserted right before etcd.
func TestPluginCfgIsStockOrderPlusGatewaydnsBeforeEtcd(t *testing.T) {
	f, err := os.Open("../../plugin.cfg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	plugins, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range plugins {
		names = append(names, p.Name)
	}
	i := slices.Index(names, "gatewaydns")
	if i < 0 || i+1 >= len(names) || names[i+1] != "etcd" {
		t.Fatalf("gatewaydns must stand right before etcd, order is %v", names)
	}
	if stock := slices.Delete(slices.Clone(names), i, i+1); !slices.Equal(stock, dnsserver.Directives) {
		t.Fatalf("plugin.cfg without gatewaydns differs from stock CoreDNS:\n got %v\nwant %v", stock, dnsserver.Directives)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Plugin
		wantErr string
	}{
		{name: "bare names are core plugins", in: "cache:cache\n", want: []Plugin{{"cache", "github.com/coredns/coredns/plugin/cache"}}},
		{name: "directive name may differ from package", in: "prometheus:metrics", want: []Plugin{{"prometheus", "github.com/coredns/coredns/plugin/metrics"}}},
		{name: "full import paths stay", in: "on:github.com/coredns/caddy/onevent", want: []Plugin{{"on", "github.com/coredns/caddy/onevent"}}},
		{name: "comments and blank lines are skipped", in: "# c\n\n  \nlog:log\n", want: []Plugin{{"log", "github.com/coredns/coredns/plugin/log"}}},
		{name: "missing package is an error naming the line", in: "log:log\nbroken\n", wantErr: "line 2"},
		{name: "duplicate directive is an error", in: "log:log\nlog:log\n", wantErr: "already listed on line 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
