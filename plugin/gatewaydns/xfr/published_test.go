package xfr

import (
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/zonefixture"
)

// publishedFixture adds to zonefixture.Records what the writers publish beside addresses: record
// ids of 8 hex digits, an SRV record with a host name target and a port (NodePort and
// DNSEndpoint SRV), an MX-only name, a TXT beside addresses, an address with a port, and a
// host-name NS key beside an address one.
var publishedFixture = append(slices.Clone(zonefixture.Records),
	zonefixture.At(20, "/skydns/test/zone/np/_tcp/_web/5d1c0e2a", `{"host":"node1.zone.test","port":8443,"priority":0,"weight":50}`),
	zonefixture.At(21, "/skydns/test/zone/np/_tcp/_web/9a0c11f1", `{"host":"node2.zone.test","port":8443,"priority":0,"weight":50}`),
	zonefixture.At(22, "/skydns/test/zone/mx/0b1c2d3e", `{"host":"mail.example.net","mail":true,"priority":10}`),
	zonefixture.At(23, "/skydns/test/zone/web2/0000aaaa", `{"host":"10.4.0.1"}`),
	zonefixture.At(24, "/skydns/test/zone/web2/0000bbbb", `{"text":"v=spf1 -all"}`),
	zonefixture.At(25, "/skydns/test/zone/ep/_tcp/_api/abcdef01", `{"host":"10.4.0.2","port":9443}`),
	zonefixture.At(26, "/skydns/test/zone/dns/ns/ns2", `{"host":"ns.example.net"}`),
)

// TestATransferHoldsTheRecordsAsPublished pins the default transfer: what a person would
// write in a zone file, with no SRV of port 0, no record-id names (the writers' 8 hex digits,
// the 1 and 2 of keys written by hand) but those an SRV or MX record targets, an SRV record's
// port and an MX record kept.
func TestATransferHoldsTheRecordsAsPublished(t *testing.T) {
	g := loaded(t, stanza{}, publishedFixture)
	rrs := zonefixture.Transferred(t, g, "zone.test.", 0)
	got := betweenSOAs(rrs)
	want := []string{
		"*.apps.zone.test. 300 IN A 10.1.0.1",
		"1._https.tcp.svc.zone.test. 300 IN A 10.0.0.6",
		"1.mail.zone.test. 300 IN A 10.0.0.5",
		"_api._tcp.ep.zone.test. 300 IN A 10.4.0.2",
		"_api._tcp.ep.zone.test. 300 IN SRV 10 100 9443 abcdef01._api._tcp.ep.zone.test.",
		"_https.tcp.svc.zone.test. 300 IN A 10.0.0.6",
		"_https.tcp.svc.zone.test. 300 IN SRV 10 100 443 1._https.tcp.svc.zone.test.",
		"_web._tcp.np.zone.test. 300 IN SRV 10 50 8443 node1.zone.test.",
		"_web._tcp.np.zone.test. 300 IN SRV 10 50 8443 node2.zone.test.",
		"abcdef01._api._tcp.ep.zone.test. 300 IN A 10.4.0.2",
		"alias.zone.test. 300 IN CNAME app.zone.test.",
		"app.zone.test. 60 IN A 10.0.0.1",
		"app.zone.test. 60 IN A 10.0.0.2",
		"clash.zone.test. 300 IN A 10.0.0.4",
		"mail.zone.test. 300 IN A 10.0.0.5",
		"mail.zone.test. 300 IN MX 20 1.mail.zone.test.",
		"mx.zone.test. 300 IN MX 10 mail.example.net.",
		"ns1.ns.dns.zone.test. 300 IN A 10.0.0.53",
		"own.zone.test. 300 IN A 10.0.0.3",
		"txt.zone.test. 300 IN TXT \"hello\"",
		"v6.zone.test. 300 IN AAAA 2001:db8::1",
		"web.eu1.zone.test. 300 IN A 10.2.0.1",
		"web2.zone.test. 300 IN A 10.4.0.1",
		"web2.zone.test. 300 IN TXT \"v=spf1 -all\"",
		"www.web.eu1.zone.test. 300 IN A 10.2.0.2",
		"zone.test. 300 IN A 10.0.0.80",
		"zone.test. 300 IN NS ns.example.net.",
		"zone.test. 300 IN NS ns1.ns.dns.zone.test.",
	}
	sameTransfer(t, got, want)
	if _, ok := rrs[0].(*dns.SOA); !ok {
		t.Errorf("first record %v, want the SOA", rrs[0])
	}
}

// Keys of one name with different TTLs are one RRset with one TTL in a transfer, the lowest
// (RFC 2181 5.2), whatever the mix of kinds beside them; the primary's own answer keeps each
// key's TTL, as the etcd plugin's does.
func TestAnRRsetIsTransferredWithTheLowestTTLOfItsKeys(t *testing.T) {
	g := loaded(t, stanza{}, append(slices.Clone(zonefixture.Records),
		zonefixture.At(30, "/skydns/test/zone/mixed/00000001", `{"host":"10.7.0.1","ttl":300}`),
		zonefixture.At(31, "/skydns/test/zone/mixed/00000002", `{"host":"10.7.0.2","ttl":60}`),
		zonefixture.At(32, "/skydns/test/zone/mixed/00000003", `{"host":"2001:db8::7","ttl":600}`),
		zonefixture.At(33, "/skydns/test/zone/mixed/00000004", `{"text":"a","ttl":30}`),
		zonefixture.At(34, "/skydns/test/zone/mixed/00000005", `{"text":"b","ttl":900}`),
	))
	var got []string
	for _, rr := range betweenSOAs(zonefixture.Transferred(t, g, "zone.test.", 0)) {
		if strings.HasPrefix(rr, "mixed.") {
			got = append(got, rr)
		}
	}
	want := []string{
		"mixed.zone.test. 30 IN TXT \"a\"",
		"mixed.zone.test. 30 IN TXT \"b\"",
		"mixed.zone.test. 60 IN A 10.7.0.1",
		"mixed.zone.test. 60 IN A 10.7.0.2",
		"mixed.zone.test. 600 IN AAAA 2001:db8::7",
	}
	sameTransfer(t, got, want)
}
