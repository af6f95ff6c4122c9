package dnscheck

import (
	"testing"

	"github.com/miekg/dns"
)

func TestCNAMEBesideOtherData(t *testing.T) {
	rr := func(s string) dns.RR {
		r, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		behaviour string
		rrs       []dns.RR
		want      bool
	}{
		{"no records", nil, false},
		{"a CNAME and its target's addresses", []dns.RR{rr("a.test. CNAME b.test."), rr("b.test. A 10.0.0.1")}, false},
		{"a CNAME beside an address of the same name", []dns.RR{rr("a.test. CNAME b.test."), rr("A.test. A 10.0.0.1")}, true},
		{"two CNAMEs of one name", []dns.RR{rr("a.test. CNAME b.test."), rr("a.test. CNAME c.test.")}, true},
		{"addresses alone", []dns.RR{rr("a.test. A 10.0.0.1"), rr("a.test. A 10.0.0.2")}, false},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			if got := CNAMEBesideOtherData(tc.rrs); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
