package xfr

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/coredns/caddy"
)

// TestSecondariesAreTheTransferPluginsToAndTheNotifyOption pins where the NOTIFYs of a zone go:
// the `to` addresses of the transfer stanza the transfer plugin would pick for the zone (the
// longest match), from its source address, with "*" left out; the notify option's addresses
// too, each address once.
func TestSecondariesAreTheTransferPluginsToAndTheNotifyOption(t *testing.T) {
	for _, tc := range []struct {
		name     string
		transfer string   // the server block's transfer plugin
		notify   []string // the notify option
		source   string   // notify-source
		zone     string
		want     string
	}{
		{name: "the to list alone", transfer: "transfer {\n to 10.0.0.7 10.0.0.8:5300\n}", zone: "zone.test.",
			want: "[10.0.0.7:53 from <nil> 10.0.0.8:5300 from <nil>]"},
		{name: "listed twice, notified once", transfer: "transfer {\n to 10.0.0.7\n}", notify: []string{"10.0.0.7:53", "10.0.0.9:53"}, zone: "zone.test.",
			want: "[10.0.0.7:53 from <nil> 10.0.0.9:53 from <nil>]"},
		{name: "anyone may transfer: nobody to notify", transfer: "transfer {\n to *\n}", zone: "zone.test.", want: "[]"},
		{name: "anyone and one secondary", transfer: "transfer {\n to * 10.0.0.7\n}", zone: "zone.test.", want: "[10.0.0.7:53 from <nil>]"},
		{name: "the transfer plugin's source", transfer: "transfer {\n to 10.0.0.7\n source 10.0.0.1\n}", source: "10.0.0.2", notify: []string{"10.0.0.9:53"}, zone: "zone.test.",
			want: "[10.0.0.9:53 from 10.0.0.2 10.0.0.7:53 from 10.0.0.1]"},
		{name: "notify-source where the transfer plugin has none", transfer: "transfer {\n to 10.0.0.7\n}", source: "10.0.0.2", zone: "zone.test.",
			want: "[10.0.0.7:53 from 10.0.0.2]"},
		{name: "the longest match of the stanzas' zones", transfer: "transfer test {\n to 10.0.0.1\n}\ntransfer zone.test {\n to 10.0.0.2\n}", zone: "zone.test.",
			want: "[10.0.0.2:53 from <nil>]"},
		{name: "a stanza of other zones", transfer: "transfer other.test {\n to 10.0.0.1\n}", notify: []string{"10.0.0.9:53"}, zone: "zone.test.",
			want: "[10.0.0.9:53 from <nil>]"},
		{name: "no transfer plugin", notify: []string{"10.0.0.9:53"}, zone: "zone.test.", want: "[10.0.0.9:53 from <nil>]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", tc.transfer)
			c.ServerBlockKeys = []string{"zone.test."}
			stanzas, err := ParseTransfer(&c.Dispenser, c.ServerBlockKeys)
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{Notify: tc.notify, NotifySource: net.ParseIP(tc.source), Transfer: stanzas}
			var got []string
			for _, a := range cfg.notifyTargets(tc.zone) {
				got = append(got, fmt.Sprintf("%s from %v", a.addr, a.source))
			}
			if s := fmt.Sprintf("%v", got); s != tc.want {
				t.Errorf("NOTIFYs of %s go to %s, want %s", tc.zone, s, tc.want)
			}
		})
	}
}

// TestTheTransferPluginsStanzasAreReadAsItReadsThem: what the transfer plugin refuses, the
// reading refuses, so that NOTIFYs never go where transfers are not allowed.
func TestTheTransferPluginsStanzasAreReadAsItReadsThem(t *testing.T) {
	for _, tc := range []struct{ lines, err string }{
		{"transfer {\n to\n}", "Wrong argument count"},
		{"transfer {\n to not:an:address\n}", "transfer to not:an:address"},
		{"transfer {\n to 10.0.0.7\n source nowhere\n}", "Wrong argument count"},
		{"transfer {\n to 10.0.0.7\n from 10.0.0.8\n}", `unknown property "from"`},
	} {
		c := caddy.NewTestController("dns", tc.lines)
		if _, err := ParseTransfer(&c.Dispenser, []string{"zone.test."}); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: error %v, want one with %q", tc.lines, err, tc.err)
		}
	}
}
