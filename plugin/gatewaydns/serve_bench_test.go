package gatewaydns

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/benchdata"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// BenchmarkServeDNS is the query path from a parsed question to the written reply, over an
// index of 10k names laid out as the writer lays them out: the cost that make bench sees on
// top of CoreDNS's own server loop. Run with -benchmem; allocations are most of the cost.
func BenchmarkServeDNS(b *testing.B) {
	c := caddy.NewTestController("dns", "gatewaydns openmcp.cluster")
	cfg, err := parse(c)
	if err != nil {
		b.Fatal(err)
	}
	g, st := newPlugin(cfg)
	kvs := []record.KV{
		{Key: "/skydns/cluster/openmcp/eu1/alias/1", Value: []byte(`{"host":"app1.eu1.openmcp.cluster"}`)},
		{Key: "/skydns/cluster/openmcp/eu1/svc/_tcp/_https/1", Value: []byte(`{"host":"10.1.0.1","port":443}`)},
	}
	for i := range 10000 {
		kvs = append(kvs,
			record.KV{Key: fmt.Sprintf("/skydns/cluster/openmcp/eu1/app%d/3e6bee2e", i), Value: []byte(fmt.Sprintf(`{"host":"10.0.%d.%d","ttl":60}`, i/256, i%256))},
			record.KV{Key: fmt.Sprintf("/skydns/cluster/openmcp/eu1/app%d/9a0c11f0", i), Value: []byte(`{"host":"2001:db8::1","ttl":60}`)},
		)
	}
	for _, p := range st.prefixes {
		st.index.Load(p, kvs)
	}
	questions := []struct {
		name  string
		qname string
		qtype uint16
		rcode int
	}{
		{"A hit", "app42.eu1.openmcp.cluster.", dns.TypeA, dns.RcodeSuccess},
		{"AAAA hit", "app42.eu1.openmcp.cluster.", dns.TypeAAAA, dns.RcodeSuccess},
		{"NXDOMAIN", "nope.eu1.openmcp.cluster.", dns.TypeA, dns.RcodeNameError},
		{"CNAME chased in zone", "alias.eu1.openmcp.cluster.", dns.TypeA, dns.RcodeSuccess},
		{"SRV", "_https._tcp.svc.eu1.openmcp.cluster.", dns.TypeSRV, dns.RcodeSuccess},
	}
	ctx := context.Background()
	for _, q := range questions {
		b.Run(q.name, func(b *testing.B) {
			req := new(dns.Msg)
			req.SetQuestion(q.qname, q.qtype)
			b.ReportAllocs()
			for b.Loop() {
				rec := dnstest.NewRecorder(&test.ResponseWriter{})
				if _, err := g.ServeDNS(ctx, rec, req); err != nil || rec.Msg.Rcode != q.rcode {
					b.Fatalf("rcode %d, err %v", rec.Msg.Rcode, err)
				}
			}
		})
	}
}

// BenchmarkServeDNSSubtree is the cost of one question whose read spans a subtree (an
// ancestor of every name, the apex, a "*" or "any" label) at two sizes of that subtree, from
// the parsed question to the written reply (before the server truncates it to the client's
// size). Reads bounded by the answer limit cost the same at both sizes. "after write" changes
// one record below the name before each question: "first" one of the records the answer
// holds, "anywhere" a random name, as a watch would.
func BenchmarkServeDNSSubtree(b *testing.B) {
	questions := []struct {
		name, qname string
		write       func(n int) int // the name to write to before each question; nil: none
	}{
		{"apex", "openmcp.cluster.", nil},
		{"ancestor", "bench.openmcp.cluster.", nil},
		{"ancestor after write first", "bench.openmcp.cluster.", func(int) int { return 1 }},
		{"ancestor after write anywhere", "bench.openmcp.cluster.", func(n int) int { return rand.IntN(n) }},
		{"star", "*.bench.openmcp.cluster.", nil},
		{"any", "h5.any.openmcp.cluster.", nil},
	}
	key := func(i int) string { return fmt.Sprintf("/skydns/cluster/openmcp/bench/h%d/3e6bee2e", i) }
	for _, n := range []int{10000, 100000} {
		c := caddy.NewTestController("dns", "gatewaydns openmcp.cluster")
		cfg, err := parse(c)
		if err != nil {
			b.Fatal(err)
		}
		g, st := newPlugin(cfg)
		kvs := make([]record.KV, n)
		for i := range kvs {
			kvs[i] = record.KV{Key: key(i), Value: fmt.Appendf(nil, `{"host":"10.%d.%d.%d"}`, i>>16&255, i>>8&255, i&255),
				Revision: int64(i + 1), Created: int64(i + 1)}
		}
		for _, p := range st.prefixes {
			st.index.Load(p, kvs)
		}
		rev := int64(n + 1)
		for _, q := range questions {
			b.Run(fmt.Sprintf("%s/%d", q.name, n), func(b *testing.B) {
				req := new(dns.Msg)
				req.SetQuestion(q.qname, dns.TypeA)
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if q.write != nil {
						rev++
						st.index.Apply([]record.Change{{KV: record.KV{Key: key(q.write(n)),
							Value: fmt.Appendf(nil, `{"host":"10.200.%d.%d"}`, i>>8&255, i&255), Revision: rev, Created: 2}}})
					}
					rec := dnstest.NewRecorder(&test.ResponseWriter{})
					if _, err := g.ServeDNS(context.Background(), rec, req); err != nil || len(rec.Msg.Answer) == 0 {
						b.Fatalf("%d answers, err %v", len(rec.Msg.Answer), err)
					}
				}
			})
		}
	}
}

// BenchmarkServeDNSMix is make bench's phase S in process: the full mix of questions, in the
// order dnsperf sends them, to indexes of 1k and 100k records, from the parsed question to the
// packed reply; and each part of the mix alone. Without the network's noise, the ratio of the
// two sizes is where a change to the index shows first; make bench's rounds judge it.
func BenchmarkServeDNSMix(b *testing.B) {
	mixes := []benchdata.Mix{benchdata.MixFull}
	for _, p := range benchdata.MixFull.Parts {
		mixes = append(mixes, benchdata.Mix{Name: p.What, Parts: []benchdata.MixPart{{What: p.What, Weight: 1}}})
	}
	for _, n := range []int{1000, 100000} {
		c := caddy.NewTestController("dns", "gatewaydns "+benchdata.Zone)
		cfg, err := parse(c)
		if err != nil {
			b.Fatal(err)
		}
		g, st := newPlugin(cfg)
		d := benchdata.New(record.DefaultPrefix, n)
		kvs := make([]record.KV, len(d.Records))
		for i, r := range d.Records {
			kvs[i] = record.KV{Key: r.Key, Value: []byte(r.Value), Revision: int64(i + 1), Created: int64(i + 1)}
		}
		for _, p := range st.prefixes {
			st.index.Load(p, kvs)
		}
		for _, m := range mixes {
			var reqs []*dns.Msg
			for _, q := range d.Queries(m, 20000) {
				req := new(dns.Msg)
				req.SetQuestion(dns.Fqdn(q.Name), dns.StringToType[q.Type])
				reqs = append(reqs, req)
			}
			b.Run(fmt.Sprintf("%s/records=%d", m.Name, n), func(b *testing.B) {
				ctx := context.Background()
				buf := make([]byte, 0, dns.MaxMsgSize)
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					req := reqs[i%len(reqs)]
					rec := dnstest.NewRecorder(&test.ResponseWriter{})
					if _, err := g.ServeDNS(ctx, rec, req); err != nil || rec.Msg == nil {
						b.Fatalf("%s: no reply, err %v", req.Question[0].String(), err)
					}
					if rec.Msg.Rcode != dns.RcodeNameError && len(rec.Msg.Answer) == 0 {
						b.Fatalf("%s: no answer:\n%v", req.Question[0].String(), rec.Msg)
					}
					if _, err := rec.Msg.PackBuffer(buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
