package gatewaydns

import (
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/dnscheck"
	"github.com/gatewaydns/gatewaydns/internal/zonefixture"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// The CNAME rule (index/cname.go) in the handler's answers: which records keep a name, for
// each kind of question.

// answerLines is the answer section the handler gives to name (in zone.test.) of type qtype
// from ix, as "owner TYPE rdata" lines, sorted. It fails t on a SERVFAIL, and on a CNAME beside
// other data where the CNAME rule applies.
func answerLines(t *testing.T, ix *index.Index, name string, qtype uint16) []string {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), qtype)
	m := reply(t, answering(ix, []string{"zone.test."}), q)
	if m.Rcode == dns.RcodeServerFailure {
		t.Fatalf("%s %s: SERVFAIL", name, dns.TypeToString[qtype])
	}
	if ruledQuestion(qtype) && dnscheck.CNAMEBesideOtherData(m.Answer) {
		t.Fatalf("%s %s: a CNAME beside other data: %v", name, dns.TypeToString[qtype], m.Answer)
	}
	var out []string
	for _, rr := range m.Answer {
		f := strings.Fields(rr.String())
		out = append(out, f[0]+" "+f[3]+" "+strings.Join(f[4:], " "))
	}
	slices.Sort(out)
	return out
}

func TestAnswerNeverMixesACNAMEWithOtherData(t *testing.T) {
	base := []record.KV{
		zonefixture.At(1, "/skydns/test/zone/app/1", `{"host":"10.0.0.1"}`),
		zonefixture.At(1, "/skydns/test/zone/other/1", `{"host":"10.0.0.2"}`),
	}
	tests := []struct {
		behaviour string
		kvs       []record.KV
		qname     string
		qtype     uint16
		want      []string
	}{
		{"the older CNAME keeps the name: the later A record is left out",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`), zonefixture.At(9, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"app.zone.test. A 10.0.0.1", "n.zone.test. CNAME app.zone.test."}},
		{"older A records keep the name: the later CNAME is left out",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`), zonefixture.At(9, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"n.zone.test. A 10.9.0.1"}},
		{"one transaction (equal revisions): the other data keeps the name",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`), zonefixture.At(5, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"n.zone.test. A 10.9.0.1"}},
		{"of two CNAMEs the older answers, whatever the key order",
			[]record.KV{zonefixture.At(9, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`), zonefixture.At(5, "/skydns/test/zone/n/b", `{"host":"other.zone.test"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"n.zone.test. CNAME other.zone.test.", "other.zone.test. A 10.0.0.2"}},
		{"an older TXT record keeps the name: no CNAME in a TXT answer",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/n/t", `{"text":"v=1"}`), zonefixture.At(9, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`)},
			"n.zone.test", dns.TypeTXT,
			[]string{`n.zone.test. TXT "v=1"`}},
		{"text takes no part in an A answer: the CNAME answers beside an older TXT record (external-dns's registry records)",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/n/t", `{"text":"v=1"}`), zonefixture.At(9, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"app.zone.test. A 10.0.0.1", "n.zone.test. CNAME app.zone.test."}},
		{"an older CNAME keeps a TXT answer to itself",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`), zonefixture.At(9, "/skydns/test/zone/n/t", `{"text":"v=1"}`)},
			"n.zone.test", dns.TypeTXT,
			nil},
		{"an A question ignores text whatever its age",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/n/t", `{"text":"v=1"}`), zonefixture.At(7, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`), zonefixture.At(9, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"n.zone.test. A 10.9.0.1"}},
		{"SRV answers keep host-name targets beside addresses, as the stock plugin",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/n/a", `{"host":"app.zone.test","port":80}`), zonefixture.At(9, "/skydns/test/zone/n/b", `{"host":"10.9.0.1","port":81}`)},
			"n.zone.test", dns.TypeSRV,
			[]string{"n.zone.test. SRV 10 50 80 app.zone.test.", "n.zone.test. SRV 10 50 81 b.n.zone.test."}},
		// SRV and MX targets (a host name with a port or "mail") are not CNAMEs.
		{"an MX target older than the addresses does not take the name: A answers the addresses",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/n/m", `{"host":"mx.zone.test","priority":10,"mail":true}`), zonefixture.At(9, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"n.zone.test. A 10.9.0.1"}},
		{"the MX beside addresses answers MX",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/n/m", `{"host":"app.zone.test","priority":20,"mail":true}`), zonefixture.At(9, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`)},
			"n.zone.test", dns.TypeMX,
			[]string{"n.zone.test. MX 20 app.zone.test."}},
		{"an SRV target older than the addresses does not take the name",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/n/s", `{"host":"app.zone.test","port":443,"priority":10,"weight":5}`), zonefixture.At(9, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"n.zone.test. A 10.9.0.1"}},
		{"an SRV target beside a CNAME is no second CNAME: the CNAME answers alone",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/n/s", `{"host":"other.zone.test","port":443}`), zonefixture.At(9, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"app.zone.test. A 10.0.0.1", "n.zone.test. CNAME app.zone.test."}},
		{"an MX target beside text: TXT answers the text, not a CNAME to the mail host",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/n/m", `{"host":"app.zone.test","mail":true}`), zonefixture.At(9, "/skydns/test/zone/n/t", `{"text":"v=spf1 -all","owner":"c1","sources":["DNSEndpoint/ns/e"]}`)},
			"n.zone.test", dns.TypeTXT,
			[]string{`n.zone.test. TXT "v=spf1 -all"`}},
		{"an MX target beside text only: no CNAME for an A question",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/n/m", `{"host":"app.zone.test","mail":true}`), zonefixture.At(9, "/skydns/test/zone/n/t", `{"text":"v=spf1 -all"}`)},
			"n.zone.test", dns.TypeA,
			nil},
		{"a name of SRV targets alone answers A with a CNAME to the oldest target, as the stock plugin (one CNAME)",
			[]record.KV{zonefixture.At(9, "/skydns/test/zone/_x/_tcp/n/1", `{"host":"app.zone.test","port":443}`), zonefixture.At(5, "/skydns/test/zone/_x/_tcp/n/2", `{"host":"other.zone.test","port":443}`)},
			"n._tcp._x.zone.test", dns.TypeA,
			[]string{"n._tcp._x.zone.test. CNAME other.zone.test.", "other.zone.test. A 10.0.0.2"}},
		{"a name of SRV targets answers SRV with both",
			[]record.KV{zonefixture.At(9, "/skydns/test/zone/_x/_tcp/n/1", `{"host":"app.zone.test","port":443}`), zonefixture.At(5, "/skydns/test/zone/_x/_tcp/n/2", `{"host":"other.zone.test","port":8443}`)},
			"n._tcp._x.zone.test", dns.TypeSRV,
			[]string{"n._tcp._x.zone.test. SRV 10 50 443 app.zone.test.", "n._tcp._x.zone.test. SRV 10 50 8443 other.zone.test."}},
		{"a text record as gatewaydns writes it (owner, sources) is served",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/n/t", `{"text":"hello world","ttl":60,"owner":"c1","sources":["DNSEndpoint/ns/e"]}`)},
			"n.zone.test", dns.TypeTXT,
			[]string{`n.zone.test. TXT "hello world"`}},
		{"a query wildcard over a clash is ruled too",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/w/x/a", `{"host":"app.zone.test"}`), zonefixture.At(9, "/skydns/test/zone/w/y/b", `{"host":"10.9.0.1"}`)},
			"*.w.zone.test", dns.TypeA,
			[]string{"*.w.zone.test. CNAME app.zone.test.", "app.zone.test. A 10.0.0.1"}},
		{"a subtree read (an ancestor's question) is ruled too",
			[]record.KV{zonefixture.At(5, "/skydns/test/zone/w/x/a", `{"host":"10.9.0.1"}`), zonefixture.At(9, "/skydns/test/zone/w/y/b", `{"host":"app.zone.test"}`)},
			"w.zone.test", dns.TypeA,
			[]string{"w.zone.test. A 10.9.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.behaviour, func(t *testing.T) {
			ix := index.New(index.Options{})
			ix.Load(ix.Root(), append(slices.Clone(base), tt.kvs...))
			got := answerLines(t, ix, tt.qname, tt.qtype)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// The rule follows the watch: a later CNAME put beside addresses changes nothing; once the
// addresses are deleted the CNAME answers.
func TestCNAMERuleFollowsChanges(t *testing.T) {
	ix := index.New(index.Options{})
	ix.Load(ix.Root(), []record.KV{
		zonefixture.At(1, "/skydns/test/zone/app/1", `{"host":"10.0.0.1"}`),
		zonefixture.At(2, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`),
	})
	ix.Apply([]record.Change{{KV: zonefixture.At(3, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`)}})
	if got, want := answerLines(t, ix, "n.zone.test", dns.TypeA), []string{"n.zone.test. A 10.9.0.1"}; !slices.Equal(got, want) {
		t.Fatalf("after a later CNAME: %q, want %q", got, want)
	}
	if addrs, ok, _ := ix.Addresses("n.zone.test.", dns.TypeA); !ok || len(addrs) != 1 {
		t.Fatalf("the short way for A: %v %v, want the one older address", addrs, ok)
	}
	ix.Apply([]record.Change{{KV: record.KV{Key: "/skydns/test/zone/n/b", Revision: 4}, Deleted: true}})
	want := []string{"app.zone.test. A 10.0.0.1", "n.zone.test. CNAME app.zone.test."}
	if got := answerLines(t, ix, "n.zone.test", dns.TypeA); !slices.Equal(got, want) {
		t.Fatalf("after the addresses went: %q, want %q", got, want)
	}
}
