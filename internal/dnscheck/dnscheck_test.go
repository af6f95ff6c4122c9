package dnscheck

import (
	"testing"

	"github.com/miekg/dns"
)

func mustRR(t *testing.T, s string) dns.RR {
	t.Helper()
	r, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCNAMEBesideOtherData(t *testing.T) {
	rr := func(s string) dns.RR { return mustRR(t, s) }
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

func TestCompleteTransfer(t *testing.T) {
	rr := func(s string) dns.RR { return mustRR(t, s) }
	soa := rr("zone.test. 30 IN SOA ns.zone.test. hostmaster.zone.test. 14 7200 1800 86400 30")
	a := rr("a.zone.test. 60 IN A 10.0.0.1")
	for _, tc := range []struct {
		behaviour string
		rrs       []dns.RR
		ok        bool
	}{
		{"the SOA, the records, the SOA again", []dns.RR{soa, a, soa}, true},
		{"an empty zone: the SOA twice", []dns.RR{soa, soa}, true},
		{"the zone name in another case", []dns.RR{rr("ZONE.test. 30 IN SOA ns.zone.test. hostmaster.zone.test. 14 7200 1800 86400 30"), a, rr("ZONE.test. 30 IN SOA ns.zone.test. hostmaster.zone.test. 14 7200 1800 86400 30")}, true},
		{"nothing transferred", nil, false},
		{"cut short after the first SOA", []dns.RR{soa, a}, false},
		{"no opening SOA", []dns.RR{a, soa}, false},
		{"another zone's SOA", []dns.RR{rr("other.test. 30 IN SOA ns.other.test. h.other.test. 1 2 3 4 5"), a, rr("other.test. 30 IN SOA ns.other.test. h.other.test. 1 2 3 4 5")}, false},
		{"a closing SOA of another serial", []dns.RR{soa, a, rr("zone.test. 30 IN SOA ns.zone.test. hostmaster.zone.test. 15 7200 1800 86400 30")}, false},
		{"a SOA inside the transfer", []dns.RR{soa, a, soa, a, soa}, false},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			if err := CompleteTransfer("zone.test", tc.rrs); (err == nil) != tc.ok {
				t.Fatalf("got %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
