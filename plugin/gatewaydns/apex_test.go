package gatewaydns

import (
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/zonefixture"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// TestTheApexAlwaysHasNSRecordsAndTheSOAAsConfigured pins the NS and SOA answers of the apex:
// with no NS key the SOA's MNAME (never NXDOMAIN, which BIND, Knot and NSD refuse a zone for),
// NS keys holding host names beside those holding addresses (the stock plugin fails the whole
// NS answer on one), the nameserver option's names with the glue of those in the zone, and the
// SOA fields of the soa option, the stock plugin's by default.
func TestTheApexAlwaysHasNSRecordsAndTheSOAAsConfigured(t *testing.T) {
	addr := zonefixture.At(2, "/skydns/test/zone/dns/ns/ns1", `{"host":"10.0.0.53"}`)
	host := zonefixture.At(3, "/skydns/test/zone/dns/ns/ns2", `{"host":"ns.example.net"}`)
	app := zonefixture.At(4, "/skydns/test/zone/app/3e6bee2e", `{"host":"10.0.0.1"}`)
	for _, tc := range []struct {
		name   string
		stanza string
		kvs    []record.KV
		qname  string
		qtype  uint16
		want   string
	}{
		{"no NS key: the SOA's MNAME, not NXDOMAIN", "", []record.KV{app}, "zone.test.", dns.TypeNS,
			"NOERROR answer [zone.test. 300 IN NS ns.dns.zone.test.] ns []"},
		{"no NS key and a configured MNAME", "soa mname ns0.example.net", []record.KV{app}, "zone.test.", dns.TypeNS,
			"NOERROR answer [zone.test. 300 IN NS ns0.example.net.] ns []"},
		{"an NS key holding an address", "", []record.KV{addr, app}, "zone.test.", dns.TypeNS,
			"NOERROR answer [zone.test. 300 IN NS ns1.ns.dns.zone.test.] ns []"},
		{"a host-name NS key beside an address one", "", []record.KV{addr, host, app}, "zone.test.", dns.TypeNS,
			"NOERROR answer [zone.test. 300 IN NS ns.example.net.; zone.test. 300 IN NS ns1.ns.dns.zone.test.] ns []"},
		{"nameservers in and out of the zone", "nameserver ns1.zone.test 192.0.2.1 2001:db8::53\nnameserver ns.example.net", []record.KV{app}, "zone.test.", dns.TypeNS,
			"NOERROR answer [zone.test. 300 IN NS ns.example.net.; zone.test. 300 IN NS ns1.zone.test.] ns []"},
		{"the glue of an in-zone nameserver answers its A question", "nameserver ns1.zone.test 192.0.2.1 2001:db8::53", []record.KV{app}, "ns1.zone.test.", dns.TypeA,
			"NOERROR answer [ns1.zone.test. 300 IN A 192.0.2.1] ns []"},
		{"and its AAAA question", "nameserver ns1.zone.test 192.0.2.1 2001:db8::53", []record.KV{app}, "ns1.zone.test.", dns.TypeAAAA,
			"NOERROR answer [ns1.zone.test. 300 IN AAAA 2001:db8::53] ns []"},
		{"a CNAME published for a glued nameserver does not answer beside its glue", "nameserver ns1.zone.test 192.0.2.1",
			[]record.KV{app, zonefixture.At(5, "/skydns/test/zone/ns1", `{"host":"app.zone.test"}`)}, "ns1.zone.test.", dns.TypeA,
			"NOERROR answer [ns1.zone.test. 300 IN A 192.0.2.1] ns []"},
		{"addresses published for it do", "nameserver ns1.zone.test 192.0.2.1",
			[]record.KV{app, zonefixture.At(5, "/skydns/test/zone/ns1", `{"host":"192.0.2.9"}`)}, "ns1.zone.test.", dns.TypeA,
			"NOERROR answer [ns1.zone.test. 300 IN A 192.0.2.1; ns1.zone.test. 300 IN A 192.0.2.9] ns []"},
		{"the stock SOA by default", "", []record.KV{app}, "zone.test.", dns.TypeSOA,
			"NOERROR answer [zone.test. 30 IN SOA ns.dns.zone.test. hostmaster.zone.test. 4 7200 1800 86400 30] ns []"},
		{"the SOA as configured", "soa mname ns1.zone.test rname dns-admin@example.net refresh 1h retry 10m expire 336h minimum 60", []record.KV{app}, "zone.test.", dns.TypeSOA,
			"NOERROR answer [zone.test. 60 IN SOA ns1.zone.test. dns-admin.example.net. 4 3600 600 1209600 60] ns []"},
		{"a negative answer carries the configured SOA", "soa rname hostmaster.example.net", []record.KV{app}, "nothere.zone.test.", dns.TypeA,
			"NXDOMAIN answer [] ns [zone.test. 30 IN SOA ns.dns.zone.test. hostmaster.example.net. 4 7200 1800 86400 30]"},
		{"NS below the apex stays NODATA", "", []record.KV{app}, "app.zone.test.", dns.TypeNS,
			"NOERROR answer [] ns [zone.test. 30 IN SOA ns.dns.zone.test. hostmaster.zone.test. 4 7200 1800 86400 30]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := loadedStanza(t, "gatewaydns zone.test {\n"+tc.stanza+"\n}", tc.kvs)
			if got := answerText(t, g, tc.qname, tc.qtype); got != tc.want {
				t.Errorf("%s %s:\n got %s\nwant %s", tc.qname, dns.TypeToString[tc.qtype], got, tc.want)
			}
		})
	}
}

// TestTheApexOptionsRefuseWhatTheyCannotMean pins the errors of the soa and nameserver options.
func TestTheApexOptionsRefuseWhatTheyCannotMean(t *testing.T) {
	for _, tc := range []struct{ stanza, wantErr string }{
		{"soa mname", "soa needs FIELD VALUE pairs"},
		{"soa serial 5", `soa has no field "serial"`},
		{"soa mname a..b", "soa mname"},
		{"soa refresh 0", "soa refresh"},
		{"soa minimum 600", "soa minimum"},
		{"negative-ttl 10\nsoa minimum 20", "given twice"},
		{"nameserver", "nameserver needs a NAME"},
		{"nameserver ns.example.net 192.0.2.1", "only for a name inside the zones"},
		{"nameserver ns1.zone.test not-an-ip", "is not an IP address"},
		{"nameserver ns1.zone.test\nnameserver NS1.zone.test.", "given twice"},
		{"transfer-synthetic yes", "transfer-synthetic takes no arguments"},
	} {
		_, err := parse(caddy.NewTestController("dns", "gatewaydns zone.test {\n"+tc.stanza+"\n}"))
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "Testfile:") {
			t.Errorf("%q: error %v, want one naming the line and saying %q", tc.stanza, err, tc.wantErr)
		}
	}
}
