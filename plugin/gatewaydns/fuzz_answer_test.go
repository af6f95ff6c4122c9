package gatewaydns

import (
	"bytes"
	"context"
	"net"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/dnscheck"
	"github.com/gatewaydns/gatewaydns/internal/queryfuzz"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/prepacked"
)

// FuzzAnswer: for any stored keys and any question (queryfuzz.Input: a fixed zone plus fuzzed
// keys in the full load and the watch), the handler answers without a panic, and its reply
// packs whole and truncated to 512 bytes; where the CNAME rule applies, no CNAME stands beside
// other data. The reply is ServeDNS's own: lookup, the SOA of a negative answer, over the index
// as served, one whose reads stop at two records, and one of exact names. A handler that keeps
// packed replies writes the same bytes, asked twice (the second from the reply the first kept).
// The index's own reads are fuzzed in its package (FuzzQuery).
func FuzzAnswer(f *testing.F) {
	queryfuzz.Fuzz(f, func(t *testing.T, in queryfuzz.Input, q *dns.Msg, _ string) {
		for _, opts := range []index.Options{{}, {MaxRecords: 2}, {ExactNames: true}} {
			ix := index.New(opts)
			in.Fill(ix)
			checkReply(t, q, reply(t, answering(ix, queryfuzz.Zones), q))
			checkPacked(t, ix, q)
		}
		// And a stanza whose nameserver option glues a name the fixture publishes a CNAME for:
		// the glue answers, never beside the CNAME.
		ix := index.New(index.Options{})
		in.Fill(ix)
		g := answering(ix, queryfuzz.Zones)
		g.apex = answer.NewApex()
		g.apex.Nameservers = []answer.Nameserver{{Name: "cname." + queryfuzz.Zone, Glue: []net.IP{net.ParseIP("192.0.2.1")}}}
		checkReply(t, q, reply(t, g, q))
	})
}

// checkReply fails t unless m, the reply to q, packs whole and truncated to the minimal UDP
// size, as the server sends it, and has no CNAME beside other data where the rule applies.
func checkReply(t *testing.T, q, m *dns.Msg) {
	t.Helper()
	question := q.Question[0].Name + " " + dns.TypeToString[q.Question[0].Qtype]
	if ruledQuestion(q.Question[0].Qtype) && dnscheck.CNAMEBesideOtherData(m.Answer) {
		t.Fatalf("%s: a CNAME beside other data: %v", question, m.Answer)
	}
	if _, err := m.Pack(); err != nil {
		t.Fatalf("%s: reply does not pack: %v\n%v", question, err, m)
	}
	m.Truncate(dns.MinMsgSize)
	if _, err := m.Pack(); err != nil {
		t.Fatalf("%s: truncated reply does not pack: %v\n%v", question, err, m)
	}
}

// checkPacked fails t unless a handler keeping packed replies writes the bytes of one that does
// not, to q and to q with EDNS, each asked twice.
func checkPacked(t *testing.T, ix *index.Index, q *dns.Msg) {
	t.Helper()
	plain := answering(ix, queryfuzz.Zones)
	g := answering(ix, queryfuzz.Zones)
	g.packer = prepacked.New("/skydns", g.Zones, g.packedRules(nil))
	g.packer.SetWrites(prepacked.WritesAll)
	remote := &net.UDPAddr{IP: net.IPv4(10, 1, 1, 1), Port: 4000}
	edns := q.Copy()
	edns.SetEdns0(1232, true)
	for _, r := range []*dns.Msg{q, edns} {
		want, _ := serveWire(t, plain, r, remote)
		for range 2 {
			if got, packed := serveWire(t, g, r, remote); !bytes.Equal(got, want) {
				t.Fatalf("%s %s (packed %t): the bytes differ from the usual path's\nwant %x\ngot  %x", r.Question[0].Name, dns.TypeToString[r.Question[0].Qtype], packed, want, got)
			}
		}
	}
}

// ruledQuestion says whether the CNAME rule applies to answers of qtype (the index's
// answerSet.forQuestion).
func ruledQuestion(qtype uint16) bool {
	switch qtype {
	case dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeCNAME:
		return true
	}
	return false
}

// answering is the handler of a stanza of zones that serves ix, as a feed's index once
// loaded, with the stock apex: what ServeDNS answers from, without etcd.
func answering(ix *index.Index, zones []string) *GatewayDNS {
	st := &stanza{cfg: &config{}}
	st.serving.Store(newBackend(ix, nil, nil))
	return &GatewayDNS{Zones: zones, stanza: st}
}

// reply is what g writes to q; it fails t when g writes nothing.
func reply(t *testing.T, g *GatewayDNS, q *dns.Msg) *dns.Msg {
	t.Helper()
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	g.ServeDNS(context.Background(), rec, q)
	if rec.Msg == nil {
		t.Fatalf("%s %s: no reply", q.Question[0].Name, dns.TypeToString[q.Question[0].Qtype])
	}
	return rec.Msg
}
