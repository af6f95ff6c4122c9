package gatewaydns

import (
	"context"
	"fmt"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

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
	g, st := newStanza(cfg)
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
