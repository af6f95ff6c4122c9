package gatewaydns

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/coredns/caddy"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/benchdata"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/packed"
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

// BenchmarkBatchedSteered is what the batched UDP path spends on a question of bench phase T:
// 10,000 names, each of two owners with two addresses, asked in a shuffled order, under each of
// the phase's conditions, every variant of every name packed first. What the conditions with a
// policy cost more per question than the one without is what phase T measures from outside.
func BenchmarkBatchedSteered(b *testing.B) {
	n := benchNames(10000)
	records := func(eu, us string) []record.KV {
		var out []record.KV
		for _, kv := range benchdata.Steered(record.DefaultPrefix, n, eu, us) {
			out = append(out, record.KV{Key: kv.Key, Value: []byte(kv.Value)})
		}
		return out
	}
	order := rand.New(rand.NewPCG(36, 36)).Perm(n)
	wires := make([][]byte, n)
	for i, k := range order {
		req := new(dns.Msg)
		req.SetQuestion(benchdata.SteeredName(k)+".", dns.TypeA)
		req.Id = uint16(i) // #nosec G115 -- a question's ID
		wires[i], _ = req.Pack()
	}
	for _, tc := range []struct{ name, stanza, eu, us string }{
		{"no policy", "", "", ""},
		{"weights 90/10", "", `{"weight":90}`, `{"weight":10}`},
		{"priorities 0/1", "", `{"priority":0}`, `{"priority":1}`},
		{"no policy, locality", "\n locality-cluster eu1 10.255.0.0/16\n", "", ""},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg, err := parse(caddy.NewTestController("dns", "gatewaydns "+benchdata.Zone+" {"+tc.stanza+"}"))
			if err != nil {
				b.Fatal(err)
			}
			g, st := newPlugin(cfg)
			g.packer.SetWrites(prepacked.WritesAll)
			for _, p := range st.prefixes {
				st.index.Load(p, records(tc.eu, tc.us))
			}
			from := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4000}
			w := &discardWriter{remote: from}
			ask := func(wire []byte, dst []byte) ([]byte, bool) {
				var q packed.Query
				var lower [256]byte
				name, ok := packed.ParseQuery(wire, &q, lower[:0])
				if !ok {
					b.Fatal("unparsed")
				}
				out, _, ok := g.packer.AppendBatched(dst[:0], &q, string(name), benchdata.Zone+".", st.index, from, false, func() uint32 { return 0 })
				return out, ok
			}
			// What the path hands over goes to the handler, which packs it: until every variant
			// of every name asked is packed.
			for missed := true; missed; {
				missed = false
				for _, wire := range wires {
					if _, ok := ask(wire, nil); !ok {
						missed = true
						m := new(dns.Msg)
						if err := m.Unpack(wire); err != nil {
							b.Fatal(err)
						}
						if _, err := g.ServeDNS(context.Background(), w, m); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			dst := make([]byte, 0, 1500)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := ask(wires[i], dst); !ok {
					b.Fatal("handed over after every variant was packed")
				}
				if i++; i == n {
					i = 0
				}
			}
		})
	}
}

// benchNames is GATEWAYDNS_BENCH_NAMES, or def.
func benchNames(def int) int {
	if v, err := strconv.Atoi(os.Getenv("GATEWAYDNS_BENCH_NAMES")); err == nil && v > 0 {
		return v
	}
	return def
}
