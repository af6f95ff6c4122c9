package gatewaydns

import (
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/zonefixture"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// TestTargetstripAnswersAsTheStockPluginAndTransfersTheSameTargets: the stock plugin honours
// targetstrip wherever it makes a name of an address key (msg.Service's NewSRV, NewMX and
// NewNS): the SRV, MX and NS targets and their glue. The SRV and NS cases are the stock
// plugin's own (plugin/etcd lookup_test.go); the MX case and the writers' layout (a record id
// below the name, targetstrip 1, as external-dns and gatewaydns write) follow the same code.
// The zone transfer carries the very targets the primary answers, with their addresses.
func TestTargetstripAnswersAsTheStockPluginAndTransfersTheSameTargets(t *testing.T) {
	kvs := []record.KV{
		// plugin/etcd lookup_test.go
		zonefixture.At(2, "/skydns/test/skydns/targetstrip/a", `{"host":"10.0.0.1","port":8080,"targetstrip":1}`),
		zonefixture.At(3, "/skydns/test/skydns/dns/ns/a", `{"host":"10.0.0.2"}`),
		zonefixture.At(4, "/skydns/test/skydns/dns/ns/b", `{"host":"10.0.0.3"}`),
		zonefixture.At(5, "/skydns/test/skydns/dns/ns/c/ns1", `{"host":"10.0.0.4","targetstrip":1}`),
		zonefixture.At(6, "/skydns/test/skydns/dns/ns/c/ns2", `{"host":"10.0.0.5","targetstrip":1}`),
		// the writers' layout
		zonefixture.At(7, "/skydns/test/skydns/mail/3e6bee2e", `{"host":"10.0.0.25","mail":true,"priority":10,"targetstrip":1}`),
		zonefixture.At(8, "/skydns/test/skydns/_tcp/_sip/0a1b2c3d", `{"host":"10.0.0.60","port":5060,"targetstrip":1}`),
	}
	for _, stanza := range []string{"gatewaydns skydns.test", "gatewaydns skydns.test {\nexact-names\n}"} {
		g := loadedStanza(t, stanza, kvs)
		answersAsStock(t, g)
		transfersTheSameTargets(t, g)
	}
}

// answersAsStock checks the answers of g, a stanza of TestTargetstripAnswersAsTheStockPluginAndTransfersTheSameTargets.
func answersAsStock(t *testing.T, g *GatewayDNS) {
	t.Helper()
	for _, tc := range []test.Case{
		{
			Qname: "targetstrip.skydns.test.", Qtype: dns.TypeSRV,
			Answer: []dns.RR{test.SRV("targetstrip.skydns.test. 300 IN SRV 10 100 8080 targetstrip.skydns.test.")},
			Extra:  []dns.RR{test.A("targetstrip.skydns.test. 300 IN A 10.0.0.1")},
		},
		{
			Qname: "skydns.test.", Qtype: dns.TypeNS,
			Answer: []dns.RR{
				test.NS("skydns.test. 300 NS a.ns.dns.skydns.test."),
				test.NS("skydns.test. 300 NS b.ns.dns.skydns.test."),
				test.NS("skydns.test. 300 NS c.ns.dns.skydns.test."),
			},
			Extra: []dns.RR{
				test.A("a.ns.dns.skydns.test. 300 A 10.0.0.2"),
				test.A("b.ns.dns.skydns.test. 300 A 10.0.0.3"),
				test.A("c.ns.dns.skydns.test. 300 A 10.0.0.4"),
				test.A("c.ns.dns.skydns.test. 300 A 10.0.0.5"),
			},
		},
		{
			Qname: "mail.skydns.test.", Qtype: dns.TypeMX,
			Answer: []dns.RR{test.MX("mail.skydns.test. 300 IN MX 10 mail.skydns.test.")},
			// plugin.MX names the exchange's address by the key unstripped, where its MX
			// record strips it (SRV's uses the stripped target): the stock answer, kept. The
			// transfer gives the address to the exchange the MX names.
			Extra: []dns.RR{test.A("3e6bee2e.mail.skydns.test. 300 IN A 10.0.0.25")},
		},
		{
			Qname: "_sip._tcp.skydns.test.", Qtype: dns.TypeSRV,
			Answer: []dns.RR{test.SRV("_sip._tcp.skydns.test. 300 IN SRV 10 100 5060 _sip._tcp.skydns.test.")},
			Extra:  []dns.RR{test.A("_sip._tcp.skydns.test. 300 IN A 10.0.0.60")},
		},
	} {
		q := new(dns.Msg)
		q.SetQuestion(tc.Qname, tc.Qtype)
		if err := test.SortAndCheck(reply(t, g, q), tc); err != nil {
			t.Errorf("%s %s: %v", tc.Qname, dns.TypeToString[tc.Qtype], err)
		}
	}
}

// transfersTheSameTargets checks the transfer of g, a stanza of TestTargetstripAnswersAsTheStockPluginAndTransfersTheSameTargets.
func transfersTheSameTargets(t *testing.T, g *GatewayDNS) {
	t.Helper()

	// The transfer: the same targets, each with the addresses the primary gives it, the NS
	// c.ns.dns.skydns.test. of keys two levels below ns.dns among them (answer.Storage).
	ch, err := g.stanza.transfers.Transfer("skydns.test.", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rrs := range ch {
		for _, rr := range rrs {
			if rr.Header().Rrtype != dns.TypeSOA {
				got = append(got, strings.Join(strings.Fields(rr.String()), " "))
			}
		}
	}
	slices.Sort(got)
	want := []string{
		"_sip._tcp.skydns.test. 300 IN A 10.0.0.60",
		"_sip._tcp.skydns.test. 300 IN SRV 10 100 5060 _sip._tcp.skydns.test.",
		"a.ns.dns.skydns.test. 300 IN A 10.0.0.2",
		"a.targetstrip.skydns.test. 300 IN A 10.0.0.1",
		"a.targetstrip.skydns.test. 300 IN SRV 10 100 8080 targetstrip.skydns.test.",
		"b.ns.dns.skydns.test. 300 IN A 10.0.0.3",
		"c.ns.dns.skydns.test. 300 IN A 10.0.0.4",
		"c.ns.dns.skydns.test. 300 IN A 10.0.0.5",
		"mail.skydns.test. 300 IN A 10.0.0.25",
		"mail.skydns.test. 300 IN MX 10 mail.skydns.test.",
		"skydns.test. 300 IN NS a.ns.dns.skydns.test.",
		"skydns.test. 300 IN NS b.ns.dns.skydns.test.",
		"skydns.test. 300 IN NS c.ns.dns.skydns.test.",
		// a is a leaf: a record of targetstrip.skydns.test. too, as the stock plugin reads it
		"targetstrip.skydns.test. 300 IN A 10.0.0.1",
		"targetstrip.skydns.test. 300 IN SRV 10 100 8080 targetstrip.skydns.test.",
	}
	if !slices.Equal(got, want) {
		t.Errorf("transfer:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
