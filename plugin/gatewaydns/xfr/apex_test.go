package xfr

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/zonefixture"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// apexFixture is a mail domain's apex as a writer publishes it below apex.dns.<zone>: addresses,
// SPF text, an MX to a host name and one to an address, an SRV with a port, and a host name
// without either (a CNAME, which the apex cannot hold); and text at the apex's own key.
var apexFixture = []record.KV{
	zonefixture.At(2, "/skydns/test/zone/dns/apex/x1", `{"host":"10.0.0.80"}`),
	zonefixture.At(3, "/skydns/test/zone/dns/apex/x2", `{"host":"2001:db8::80"}`),
	zonefixture.At(4, "/skydns/test/zone/dns/apex/x3", `{"text":"v=spf1 mx -all"}`),
	zonefixture.At(5, "/skydns/test/zone/dns/apex/x4", `{"host":"mail.example.net","mail":true,"priority":10}`),
	zonefixture.At(6, "/skydns/test/zone/dns/apex/mx2", `{"host":"10.0.0.25","mail":true,"priority":20}`),
	zonefixture.At(7, "/skydns/test/zone/dns/apex/x5", `{"host":"sip.example.net","port":5060,"priority":10,"weight":50}`),
	zonefixture.At(8, "/skydns/test/zone/dns/apex/x6", `{"host":"alias.example.net"}`),
	zonefixture.At(9, "/skydns/test/zone/3e6bee2e", `{"text":"site-verification=abc"}`),
	zonefixture.At(10, "/skydns/test/zone/www/3e6bee2e", `{"host":"10.0.0.81"}`),
}

// TestTheApexIsTransferredWhole: every record the primary answers at the apex from
// apex.dns.<zone> and the apex's key (A, AAAA, TXT, MX and SRV, an address's target with its
// address) is in the transfer, and a change of one of them moves by IXFR alone. A host name
// without a port or mail is no record of the apex: a CNAME stands alone, and the apex holds the
// SOA and the NS records.
func TestTheApexIsTransferredWhole(t *testing.T) {
	for _, exact := range []bool{false, true} {
		t.Run(fmt.Sprint("exact names ", exact), func(t *testing.T) {
			g := loaded(t, stanza{exact: exact}, apexFixture)
			full := zonefixture.Transferred(t, g, "zone.test.", 0)
			sameTransfer(t, betweenSOAs(full), []string{
				"mx2.apex.dns.zone.test. 300 IN A 10.0.0.25",
				"www.zone.test. 300 IN A 10.0.0.81",
				"zone.test. 300 IN A 10.0.0.25", // an address with mail answers A too, as plugin.A has it
				"zone.test. 300 IN A 10.0.0.80",
				"zone.test. 300 IN AAAA 2001:db8::80",
				"zone.test. 300 IN MX 10 mail.example.net.",
				"zone.test. 300 IN MX 20 mx2.apex.dns.zone.test.",
				"zone.test. 300 IN NS ns.dns.zone.test.",
				"zone.test. 300 IN SRV 10 100 5060 sip.example.net.",
				"zone.test. 300 IN TXT \"site-verification=abc\"",
				"zone.test. 300 IN TXT \"v=spf1 mx -all\"",
			})
			taken := full[0].(*dns.SOA).Serial

			// The primary answers each of them at the apex.
			for qtype, want := range map[uint16]int{dns.TypeMX: 2, dns.TypeSRV: 1, dns.TypeTXT: 2, dns.TypeA: 2, dns.TypeAAAA: 1} {
				if got := apexAnswers(t, g, qtype); got < want {
					t.Errorf("the primary answers %d %s records at the apex, want %d", got, dns.TypeToString[qtype], want)
				}
			}

			g.ix.Apply([]record.Change{{KV: zonefixture.At(20, "/skydns/test/zone/dns/apex/x4", `{"host":"mail2.example.net","mail":true,"priority":10}`)}})
			var moved []string
			for _, rr := range zonefixture.Transferred(t, g, "zone.test.", taken) {
				if _, ok := rr.(*dns.SOA); !ok {
					moved = append(moved, strings.Join(strings.Fields(rr.String()), " "))
				}
			}
			slices.Sort(moved)
			if want := []string{"zone.test. 300 IN MX 10 mail.example.net.", "zone.test. 300 IN MX 10 mail2.example.net."}; !slices.Equal(moved, want) {
				t.Errorf("the IXFR after a change of the apex's MX moved %v, want %v", moved, want)
			}
		})
	}
}

// apexAnswers is how many records of qtype owned by the apex the stanza's index answers there.
func apexAnswers(t *testing.T, g *served, qtype uint16) int {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion("zone.test.", qtype)
	rrs, _, _, err := answer.Lookup(context.Background(), noUpstream{g.ix}, g.st.Apex, "zone.test.", request.Request{Req: m, Zone: "zone.test."}, plugin.Options{})
	if err != nil {
		t.Fatalf("%s at the apex: %v", dns.TypeToString[qtype], err)
	}
	n := 0
	for _, rr := range rrs {
		if h := rr.Header(); h.Rrtype == qtype && h.Name == "zone.test." {
			n++
		}
	}
	return n
}

// noUpstream is the index as the handler answers from it, without the server's plugin chain
// for names outside the zone.
type noUpstream struct{ *index.Index }

func (noUpstream) Lookup(context.Context, request.Request, string, uint16) (*dns.Msg, error) {
	return nil, errNoUpstream
}

var errNoUpstream = errors.New("no upstream in this test")
