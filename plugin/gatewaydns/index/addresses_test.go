package index

import (
	"errors"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

func TestAddressesTakesTheShortWayOnlyForAddressOnlyNames(t *testing.T) {
	ix := New(Options{})
	ix.Load(ix.Root(), append(fixture,
		kv("/skydns/test/zone/dual/1", `{"host":"10.4.0.1","ttl":60}`),
		kv("/skydns/test/zone/dual/2", `{"host":"2001:db8::1","ttl":70}`),
		kv("/skydns/test/zone/dual/3", `{"host":"10.4.0.1","ttl":80}`),
		kv("/skydns/test/zone/alias/1", `{"host":"app.zone.test"}`),
		kv("/skydns/test/zone/mixed/1", `{"host":"10.5.0.1"}`),
		kv("/skydns/test/zone/mixed/2", `{"host":"elsewhere.example"}`),
		record.KV{Key: "/skydns/test/zone/leased/1", Value: []byte(`{"host":"10.6.0.1"}`), Lease: 7},
	))
	tests := []struct {
		name    string
		qname   string
		qtype   uint16
		want    []string // the addresses, in order
		wantTTL []uint32
		wantOK  bool
		wantErr error
	}{
		{name: "addresses of the name's records, in key order", qname: "app.zone.test", qtype: dns.TypeA, want: []string{"10.0.0.1", "10.0.0.2"}, wantTTL: []uint32{DefaultTTL, DefaultTTL}, wantOK: true},
		{name: "a host given twice answers once, with the first record's TTL", qname: "dual.zone.test", qtype: dns.TypeA, want: []string{"10.4.0.1"}, wantTTL: []uint32{60}, wantOK: true},
		{name: "AAAA takes the IPv6 records only", qname: "dual.zone.test", qtype: dns.TypeAAAA, want: []string{"2001:db8::1"}, wantTTL: []uint32{70}, wantOK: true},
		{name: "no record of the family is NODATA, not a name error", qname: "app.zone.test", qtype: dns.TypeAAAA, wantOK: true},
		{name: "text-only records are left out", qname: "txt.zone.test", qtype: dns.TypeA, want: []string{"10.0.0.7"}, wantTTL: []uint32{DefaultTTL}, wantOK: true},
		{name: "a stored wildcard answers a name that does not exist", qname: "foo.apps.zone.test", qtype: dns.TypeA, want: []string{"10.1.0.1"}, wantTTL: []uint32{DefaultTTL}, wantOK: true},
		{name: "an unknown name is a name error", qname: "nope.zone.test", qtype: dns.TypeA, wantOK: true, wantErr: ErrNotFound},
		{name: "a CNAME needs chasing: the long way", qname: "alias.zone.test", qtype: dns.TypeA},
		{name: "a CNAME beside addresses as old: the addresses alone answer (the CNAME rule)", qname: "mixed.zone.test", qtype: dns.TypeA, want: []string{"10.5.0.1"}, wantTTL: []uint32{DefaultTTL}, wantOK: true},
		{name: "a leased record's TTL follows the clock: the long way", qname: "leased.zone.test", qtype: dns.TypeA},
		{name: "a query wildcard: the long way", qname: "a.*.zone.test", qtype: dns.TypeA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addrs, ok, err := ix.Addresses(dns.Fqdn(tt.qname), tt.qtype)
			if ok != tt.wantOK || !errors.Is(err, tt.wantErr) {
				t.Fatalf("ok %v, err %v; want ok %v, err %v", ok, err, tt.wantOK, tt.wantErr)
			}
			var got []string
			var ttls []uint32
			for _, a := range addrs {
				got = append(got, a.IP.String())
				ttls = append(ttls, a.TTL)
			}
			if len(got) != len(tt.want) || len(ttls) != len(tt.wantTTL) {
				t.Fatalf("got %v %v, want %v %v", got, ttls, tt.want, tt.wantTTL)
			}
			for i := range got {
				if got[i] != tt.want[i] || ttls[i] != tt.wantTTL[i] {
					t.Errorf("got %v %v, want %v %v", got, ttls, tt.want, tt.wantTTL)
				}
			}
		})
	}
}

func TestAddressesFollowAWrite(t *testing.T) {
	ix := New(Options{})
	ix.Load(ix.Root(), fixture)
	if addrs, ok, err := ix.Addresses("own.zone.test.", dns.TypeA); !ok || err != nil || len(addrs) != 1 || addrs[0].IP.String() != "10.0.0.3" {
		t.Fatalf("before: %v %v %v", addrs, ok, err)
	}
	ix.Apply([]record.Change{{KV: kv("/skydns/test/zone/own", `{"host":"own.elsewhere.example"}`)}})
	if _, ok, err := ix.Addresses("own.zone.test.", dns.TypeA); ok || err != nil {
		t.Fatalf("a name that became a CNAME still took the short way: ok %v, err %v", ok, err)
	}
	ix.Apply([]record.Change{{KV: kv("/skydns/test/zone/own", `{"host":"10.9.9.9"}`)}})
	if addrs, ok, err := ix.Addresses("own.zone.test.", dns.TypeA); !ok || err != nil || len(addrs) != 1 || addrs[0].IP.String() != "10.9.9.9" {
		t.Fatalf("after: %v %v %v", addrs, ok, err)
	}
}
