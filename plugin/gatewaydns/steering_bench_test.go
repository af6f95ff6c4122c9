package gatewaydns

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/coredns/caddy"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/prepacked"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// BenchmarkServeDNSSteered is an A question for a name two owners publish with two addresses
// each, from the parsed question to the written reply: without a policy (answered from its
// packed reply, and by the usual path), with weights 90/10 (a draw per question, never packed),
// with weights and health checks, and with the stanza placing its clients (locality). Run with
// -benchmem: the steered questions take the usual path, plus the choice.
func BenchmarkServeDNSSteered(b *testing.B) {
	value := func(owner, host, steering string) record.KV {
		v := fmt.Sprintf(`{"host":%q,"owner":%q`, host, owner)
		if steering != "" {
			v += `,"steering":` + steering
		}
		return record.KV{Key: record.Key(record.DefaultPrefix, "app.zone.test", owner, host), Value: []byte(v + "}")}
	}
	records := func(eu, us string) []record.KV {
		return []record.KV{value("eu1", "10.0.1.1", eu), value("eu1", "10.0.1.2", eu), value("us1", "10.0.2.1", us), value("us1", "10.0.2.2", us)}
	}
	w := &discardWriter{remote: &net.UDPAddr{IP: net.IPv4(10, 1, 0, 9), Port: 4000}}
	req := new(dns.Msg)
	req.SetQuestion("app.zone.test.", dns.TypeA)
	for _, tc := range []struct {
		name, stanza string
		kvs          []record.KV
		packed       bool
	}{
		{"no policy, packed", "", records("", ""), true},
		{"no policy, usual", "", records("", ""), false},
		{"weights 90/10", "", records(`{"weight":90}`, `{"weight":10}`), true},
		{"weights and checks", "", records(`{"weight":90,"healthCheck":"tcp://:443"}`, `{"weight":10,"healthCheck":"tcp://:443"}`), true},
		{"no policy, locality", "\n locality-cluster eu1 10.1.0.0/16\n", records("", ""), true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg, err := parse(caddy.NewTestController("dns", "gatewaydns zone.test {"+tc.stanza+"}"))
			if err != nil {
				b.Fatal(err)
			}
			g, st := newPlugin(cfg)
			g.packer.SetWrites(prepacked.WritesAll)
			if !tc.packed {
				g.packer = nil
			}
			for _, p := range st.prefixes {
				st.index.Load(p, tc.kvs)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.ServeDNS(ctx, w, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
