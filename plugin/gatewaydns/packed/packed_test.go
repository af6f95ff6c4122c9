package packed

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

func reply(t *testing.T, rrs ...dns.RR) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion("App.Zone.test.", rrs[0].Header().Rrtype)
	m.Response, m.Authoritative = true, true
	for _, rr := range rrs {
		rr.Header().Name = "App.Zone.test."
		m.Answer = append(m.Answer, rr)
	}
	return m
}

func a(ip string) dns.RR {
	return &dns.A{Hdr: dns.RR_Header{Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 300}, A: net.ParseIP(ip)}
}

// TestShuffleReordersAReplyOfAddressesAsLoadbalanceDoes: every order of a reply's addresses
// comes out, each record whole; a reply of other records is left as it is.
func TestShuffleReordersAReplyOfAddressesAsLoadbalanceDoes(t *testing.T) {
	ans, ok := NewAnswer(reply(t, a("10.0.0.1"), a("10.0.0.2"), a("10.0.0.3")), 0)
	if !ok || !ans.Shufflable() {
		t.Fatalf("a reply of three A records: ok %t, shufflable %t", ok, ans.Shufflable())
	}
	q := &Query{ID: 7, Name: []byte("\x03App\x04Zone\x04test\x00"), Qtype: dns.TypeA, Qclass: dns.ClassINET}
	orders := map[string]bool{}
	n := uint32(0)
	for range 200 {
		out := ans.AppendReply(nil, q, nil)
		ans.Shuffle(out, func() uint32 { n = n*1664525 + 1013904223; return n >> 8 })
		var m dns.Msg
		if err := m.Unpack(out); err != nil {
			t.Fatal(err)
		}
		var ips []string
		for _, rr := range m.Answer {
			ips = append(ips, rr.(*dns.A).A.String())
			if rr.Header().Name != "App.Zone.test." || rr.Header().Ttl != 300 {
				t.Fatalf("a record came out torn: %v", rr)
			}
		}
		orders[strings.Join(ips, ",")] = true
		slices.Sort(ips)
		if !slices.Equal(ips, []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}) {
			t.Fatalf("the addresses changed: %v", ips)
		}
	}
	if len(orders) != 6 {
		t.Fatalf("%d of the 6 orders came out", len(orders))
	}
	txt, ok := NewAnswer(reply(t, &dns.TXT{Hdr: dns.RR_Header{Rrtype: dns.TypeTXT, Class: dns.ClassINET}, Txt: []string{"a"}},
		&dns.TXT{Hdr: dns.RR_Header{Rrtype: dns.TypeTXT, Class: dns.ClassINET}, Txt: []string{"b"}}), 0)
	if !ok || txt.Shufflable() {
		t.Fatalf("a reply of TXT records: ok %t, shufflable %t", ok, txt.Shufflable())
	}
}
