package gatewaydns

import (
	"context"
	"net"
	"testing"

	"github.com/coredns/caddy"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/benchdata"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/prepacked"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// discardWriter is a client's end that takes the reply and keeps nothing: what a question
// costs the handler alone, without a writer's own allocations.
type discardWriter struct {
	remote net.Addr
	n      int
}

func (w *discardWriter) LocalAddr() net.Addr  { return w.remote }
func (w *discardWriter) RemoteAddr() net.Addr { return w.remote }
func (w *discardWriter) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	w.n += len(b)
	return err
}
func (w *discardWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }
func (w *discardWriter) Close() error                { return nil }
func (w *discardWriter) TsigStatus() error           { return nil }
func (w *discardWriter) TsigTimersOnly(bool)         {}
func (w *discardWriter) Hijack()                     {}

// BenchmarkServeDNSPacked is a question of make bench's phase A (the zone of 100k records it
// serves; A, AAAA and NXDOMAIN questions) from the parsed question to the written reply: "hit"
// answered from the packed reply the first question kept (what nearly every question is, and
// what phase A's report takes allocations per question from), "usual" by a handler that keeps
// none (the path before packed replies). Run with -benchmem: a hit allocates nothing.
func BenchmarkServeDNSPacked(b *testing.B) {
	c := caddy.NewTestController("dns", "gatewaydns "+benchdata.Zone)
	cfg, err := parse(c)
	if err != nil {
		b.Fatal(err)
	}
	g, st := newPlugin(cfg)
	g.packer.SetWrites(prepacked.WritesAll)
	usual := *g
	usual.packer = nil
	d := benchdata.New(record.DefaultPrefix, 100000)
	kvs := make([]record.KV, len(d.Records))
	for i, r := range d.Records {
		kvs[i] = record.KV{Key: r.Key, Value: []byte(r.Value), Revision: int64(i + 1), Created: int64(i + 1)}
	}
	for _, p := range st.prefixes {
		st.index.Load(p, kvs)
	}
	w := &discardWriter{remote: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4000}}
	for _, q := range []struct {
		name, qname string
		qtype       uint16
		edns        bool
	}{
		{"A", d.A[42], dns.TypeA, false},
		{"AAAA", d.AAAA[42], dns.TypeAAAA, false},
		{"NXDOMAIN", d.NX[42], dns.TypeA, false},
		{"NODATA", d.A[42], dns.TypeAAAA, false},
		{"A with EDNS", d.A[42], dns.TypeA, true},
	} {
		req := new(dns.Msg)
		req.SetQuestion(dns.Fqdn(q.qname), q.qtype)
		if q.edns {
			req.SetEdns0(1232, true)
		}
		for _, h := range []struct {
			name string
			g    *GatewayDNS
		}{{"hit", g}, {"usual", &usual}} {
			b.Run(h.name+" "+q.name, func(b *testing.B) {
				ctx := context.Background()
				if _, err := h.g.ServeDNS(ctx, w, req); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := h.g.ServeDNS(ctx, w, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
