package index

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/dnscheck"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// at is a key created at revision rev (and last changed then).
func at(rev int64, key, value string) record.KV {
	return record.KV{Key: key, Value: []byte(value), Revision: rev, Created: rev}
}

// ruledQuestion says whether the CNAME rule applies to answers of qtype (forQuestion).
func ruledQuestion(qtype uint16) bool {
	switch qtype {
	case dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeCNAME:
		return true
	}
	return false
}

// answer builds the answer section as the handler does, through CoreDNS's plugin functions.
func answer(t *testing.T, ix *Index, name string, qtype uint16) []string {
	t.Helper()
	b, state, ctx := fuzzBackend{ix}, query(name, qtype), context.Background()
	var rrs []dns.RR
	var err error
	switch qtype {
	case dns.TypeA:
		rrs, _, err = plugin.A(ctx, b, fuzzZone, state, nil, plugin.Options{})
	case dns.TypeTXT:
		rrs, _, err = plugin.TXT(ctx, b, fuzzZone, state, nil, plugin.Options{})
	case dns.TypeSRV:
		rrs, _, err = plugin.SRV(ctx, b, fuzzZone, state, plugin.Options{})
	case dns.TypeMX:
		rrs, _, err = plugin.MX(ctx, b, fuzzZone, state, plugin.Options{})
	}
	if err != nil && !ix.IsNameError(err) {
		t.Fatalf("%s %s: %v", name, dns.TypeToString[qtype], err)
	}
	if ruledQuestion(qtype) && dnscheck.CNAMEBesideOtherData(rrs) {
		t.Fatalf("%s %s: a CNAME beside other data: %v", name, dns.TypeToString[qtype], rrs)
	}
	var out []string
	for _, rr := range rrs {
		f := strings.Fields(rr.String())
		out = append(out, f[0]+" "+f[3]+" "+strings.Join(f[4:], " "))
	}
	slices.Sort(out)
	return out
}

func TestAnswerNeverMixesACNAMEWithOtherData(t *testing.T) {
	base := []record.KV{
		at(1, "/skydns/test/zone/app/1", `{"host":"10.0.0.1"}`),
		at(1, "/skydns/test/zone/other/1", `{"host":"10.0.0.2"}`),
	}
	tests := []struct {
		behaviour string
		kvs       []record.KV
		qname     string
		qtype     uint16
		want      []string
	}{
		{"the older CNAME keeps the name: the later A record is left out",
			[]record.KV{at(5, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`), at(9, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"app.zone.test. A 10.0.0.1", "n.zone.test. CNAME app.zone.test."}},
		{"older A records keep the name: the later CNAME is left out",
			[]record.KV{at(5, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`), at(9, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"n.zone.test. A 10.9.0.1"}},
		{"one transaction (equal revisions): the other data keeps the name",
			[]record.KV{at(5, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`), at(5, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"n.zone.test. A 10.9.0.1"}},
		{"of two CNAMEs the older answers, whatever the key order",
			[]record.KV{at(9, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`), at(5, "/skydns/test/zone/n/b", `{"host":"other.zone.test"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"n.zone.test. CNAME other.zone.test.", "other.zone.test. A 10.0.0.2"}},
		{"an older TXT record keeps the name: no CNAME in a TXT answer",
			[]record.KV{at(5, "/skydns/test/zone/n/t", `{"text":"v=1"}`), at(9, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`)},
			"n.zone.test", dns.TypeTXT,
			[]string{`n.zone.test. TXT "v=1"`}},
		{"text takes no part in an A answer: the CNAME answers beside an older TXT record (external-dns's registry records)",
			[]record.KV{at(5, "/skydns/test/zone/n/t", `{"text":"v=1"}`), at(9, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"app.zone.test. A 10.0.0.1", "n.zone.test. CNAME app.zone.test."}},
		{"an older CNAME keeps a TXT answer to itself",
			[]record.KV{at(5, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`), at(9, "/skydns/test/zone/n/t", `{"text":"v=1"}`)},
			"n.zone.test", dns.TypeTXT,
			nil},
		{"an A question ignores text whatever its age",
			[]record.KV{at(5, "/skydns/test/zone/n/t", `{"text":"v=1"}`), at(7, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`), at(9, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"n.zone.test. A 10.9.0.1"}},
		{"SRV answers keep host-name targets beside addresses, as the stock plugin",
			[]record.KV{at(5, "/skydns/test/zone/n/a", `{"host":"app.zone.test","port":80}`), at(9, "/skydns/test/zone/n/b", `{"host":"10.9.0.1","port":81}`)},
			"n.zone.test", dns.TypeSRV,
			[]string{"n.zone.test. SRV 10 50 80 app.zone.test.", "n.zone.test. SRV 10 50 81 b.n.zone.test."}},
		// SRV and MX targets (a host name with a port or "mail") are not CNAMEs.
		{"an MX target older than the addresses does not take the name: A answers the addresses",
			[]record.KV{at(5, "/skydns/test/zone/n/m", `{"host":"mx.zone.test","priority":10,"mail":true}`), at(9, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"n.zone.test. A 10.9.0.1"}},
		{"the MX beside addresses answers MX",
			[]record.KV{at(5, "/skydns/test/zone/n/m", `{"host":"app.zone.test","priority":20,"mail":true}`), at(9, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`)},
			"n.zone.test", dns.TypeMX,
			[]string{"n.zone.test. MX 20 app.zone.test."}},
		{"an SRV target older than the addresses does not take the name",
			[]record.KV{at(5, "/skydns/test/zone/n/s", `{"host":"app.zone.test","port":443,"priority":10,"weight":5}`), at(9, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"n.zone.test. A 10.9.0.1"}},
		{"an SRV target beside a CNAME is no second CNAME: the CNAME answers alone",
			[]record.KV{at(5, "/skydns/test/zone/n/s", `{"host":"other.zone.test","port":443}`), at(9, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`)},
			"n.zone.test", dns.TypeA,
			[]string{"app.zone.test. A 10.0.0.1", "n.zone.test. CNAME app.zone.test."}},
		{"an MX target beside text: TXT answers the text, not a CNAME to the mail host",
			[]record.KV{at(5, "/skydns/test/zone/n/m", `{"host":"app.zone.test","mail":true}`), at(9, "/skydns/test/zone/n/t", `{"text":"v=spf1 -all","owner":"c1","sources":["DNSEndpoint/ns/e"]}`)},
			"n.zone.test", dns.TypeTXT,
			[]string{`n.zone.test. TXT "v=spf1 -all"`}},
		{"an MX target beside text only: no CNAME for an A question",
			[]record.KV{at(5, "/skydns/test/zone/n/m", `{"host":"app.zone.test","mail":true}`), at(9, "/skydns/test/zone/n/t", `{"text":"v=spf1 -all"}`)},
			"n.zone.test", dns.TypeA,
			nil},
		{"a name of SRV targets alone answers A with a CNAME to the oldest target, as the stock plugin (one CNAME)",
			[]record.KV{at(9, "/skydns/test/zone/_x/_tcp/n/1", `{"host":"app.zone.test","port":443}`), at(5, "/skydns/test/zone/_x/_tcp/n/2", `{"host":"other.zone.test","port":443}`)},
			"n._tcp._x.zone.test", dns.TypeA,
			[]string{"n._tcp._x.zone.test. CNAME other.zone.test.", "other.zone.test. A 10.0.0.2"}},
		{"a name of SRV targets answers SRV with both",
			[]record.KV{at(9, "/skydns/test/zone/_x/_tcp/n/1", `{"host":"app.zone.test","port":443}`), at(5, "/skydns/test/zone/_x/_tcp/n/2", `{"host":"other.zone.test","port":8443}`)},
			"n._tcp._x.zone.test", dns.TypeSRV,
			[]string{"n._tcp._x.zone.test. SRV 10 50 443 app.zone.test.", "n._tcp._x.zone.test. SRV 10 50 8443 other.zone.test."}},
		{"a text record as gatewaydns writes it (owner, sources) is served",
			[]record.KV{at(5, "/skydns/test/zone/n/t", `{"text":"hello world","ttl":60,"owner":"c1","sources":["DNSEndpoint/ns/e"]}`)},
			"n.zone.test", dns.TypeTXT,
			[]string{`n.zone.test. TXT "hello world"`}},
		{"a query wildcard over a clash is ruled too",
			[]record.KV{at(5, "/skydns/test/zone/w/x/a", `{"host":"app.zone.test"}`), at(9, "/skydns/test/zone/w/y/b", `{"host":"10.9.0.1"}`)},
			"*.w.zone.test", dns.TypeA,
			[]string{"*.w.zone.test. CNAME app.zone.test.", "app.zone.test. A 10.0.0.1"}},
		{"a subtree read (an ancestor's question) is ruled too",
			[]record.KV{at(5, "/skydns/test/zone/w/x/a", `{"host":"10.9.0.1"}`), at(9, "/skydns/test/zone/w/y/b", `{"host":"app.zone.test"}`)},
			"w.zone.test", dns.TypeA,
			[]string{"w.zone.test. A 10.9.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.behaviour, func(t *testing.T) {
			ix := New(Options{})
			ix.Load(ix.Root(), append(slices.Clone(base), tt.kvs...))
			got := answer(t, ix, tt.qname, tt.qtype)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// The rule follows the watch: a later CNAME put beside addresses changes nothing; once the
// addresses are deleted the CNAME answers.
func TestCNAMERuleFollowsChanges(t *testing.T) {
	ix := New(Options{})
	ix.Load(ix.Root(), []record.KV{
		at(1, "/skydns/test/zone/app/1", `{"host":"10.0.0.1"}`),
		at(2, "/skydns/test/zone/n/b", `{"host":"10.9.0.1"}`),
	})
	ix.Apply([]record.Change{{KV: at(3, "/skydns/test/zone/n/a", `{"host":"app.zone.test"}`)}})
	if got, want := answer(t, ix, "n.zone.test", dns.TypeA), []string{"n.zone.test. A 10.9.0.1"}; !slices.Equal(got, want) {
		t.Fatalf("after a later CNAME: %q, want %q", got, want)
	}
	if addrs, ok, _ := ix.Addresses("n.zone.test.", dns.TypeA); !ok || len(addrs) != 1 {
		t.Fatalf("the short way for A: %v %v, want the one older address", addrs, ok)
	}
	ix.Apply([]record.Change{{KV: record.KV{Key: "/skydns/test/zone/n/b", Revision: 4}, Deleted: true}})
	want := []string{"app.zone.test. A 10.0.0.1", "n.zone.test. CNAME app.zone.test."}
	if got := answer(t, ix, "n.zone.test", dns.TypeA); !slices.Equal(got, want) {
		t.Fatalf("after the addresses went: %q, want %q", got, want)
	}
}

// A clash is told once when it starts and once when it ends, through loads and watch changes.
func TestClashIsToldWhenItStartsAndWhenItEnds(t *testing.T) {
	var told []string
	ix := New(Options{Clash: func(name string, clash bool, names int) {
		told = append(told, fmt.Sprintf("%s %v %d", name, clash, names))
	}})
	clean := []record.KV{
		at(1, "/skydns/test/zone/app/1", `{"host":"10.0.0.1"}`),
		at(2, "/skydns/test/zone/same/1", `{"host":"lb.example.net"}`),
		at(3, "/skydns/test/zone/same/2", `{"host":"LB.example.net."}`), // one CNAME target, twice
	}
	clashing := append(slices.Clone(clean), at(4, "/skydns/test/zone/app/2", `{"host":"lb.example.net"}`))
	steps := []struct {
		what string
		do   func()
		want []string
	}{
		{"a load without a clash", func() { ix.Load(ix.Root(), clean) }, nil},
		{"a load with one", func() { ix.Load(ix.Root(), clashing) }, []string{"app.zone.test. true 1"}},
		{"the same load again", func() { ix.Load(ix.Root(), clashing) }, nil},
		{"the CNAME deleted", func() {
			ix.Apply([]record.Change{{KV: record.KV{Key: "/skydns/test/zone/app/2", Revision: 5}, Deleted: true}})
		}, []string{"app.zone.test. false 0"}},
		{"a second CNAME target put", func() {
			ix.Apply([]record.Change{{KV: at(6, "/skydns/test/zone/same/3", `{"host":"other.example.net"}`)}})
		}, []string{"same.zone.test. true 1"}},
		{"a load that no longer holds it", func() { ix.Load(ix.Root(), clean) }, []string{"same.zone.test. false 0"}},
	}
	for _, s := range steps {
		told = nil
		s.do()
		if !slices.Equal(told, s.want) {
			t.Fatalf("%s: told %q, want %q", s.what, told, s.want)
		}
	}
}

// A clash is a clash of the name whose own records clash: keys below a name that are names of
// their own (eu1/web, eu1/api, written by hand) are not records of eu1, whatever their kinds.
func TestClashCountsOnlyTheNamesOwnRecords(t *testing.T) {
	tests := []struct {
		name  string
		keys  []record.KV
		clash []string
	}{
		{"names of their own below a parent", []record.KV{
			at(1, "/skydns/test/zone/eu1/web", `{"host":"10.0.0.1"}`),
			at(2, "/skydns/test/zone/eu1/api", `{"host":"lb.example.net"}`),
		}, nil},
		{"writer record ids", []record.KV{
			at(1, "/skydns/test/zone/eu1/web/50ec20e1", `{"host":"10.0.0.1"}`),
			at(2, "/skydns/test/zone/eu1/web/0a1b2c3d", `{"host":"lb.example.net"}`),
		}, []string{"web.eu1.zone.test."}},
		{"the x1, x2 of CoreDNS's README", []record.KV{
			at(1, "/skydns/test/zone/eu1/x1", `{"host":"10.0.0.1"}`),
			at(2, "/skydns/test/zone/eu1/x2", `{"host":"lb.example.net"}`),
		}, []string{"eu1.zone.test."}},
		{"a record id beside a name of its own", []record.KV{
			at(1, "/skydns/test/zone/eu1/7", `{"host":"10.0.0.1"}`),
			at(2, "/skydns/test/zone/eu1/api", `{"host":"lb.example.net"}`),
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var clashing []string
			ix := New(Options{Clash: func(name string, clash bool, _ int) {
				if clash {
					clashing = append(clashing, name)
				}
			}})
			ix.Load(ix.Root(), tt.keys)
			if !slices.Equal(clashing, tt.clash) {
				t.Errorf("after a load: clashes %q, want %q", clashing, tt.clash)
			}
			clashing = nil
			ix.Load(ix.Root(), nil)
			for _, kv := range tt.keys {
				ix.Apply([]record.Change{{KV: kv}})
			}
			if !slices.Equal(clashing, tt.clash) {
				t.Errorf("after watch puts: clashes %q, want %q", clashing, tt.clash)
			}
		})
	}
}

// BenchmarkApplyCNAMERule is what ruling costs a set when it is made: nothing to rule for
// nearly all of them, a clash for the rare one.
func BenchmarkApplyCNAMERule(b *testing.B) {
	for _, tc := range []struct {
		name string
		sx   []msg.Service
	}{
		{"one address", []msg.Service{{Host: "10.0.0.1"}}},
		{"three addresses", []msg.Service{{Host: "10.0.0.1"}, {Host: "10.0.0.2"}, {Host: "2001:db8::1"}}},
		{"one CNAME", []msg.Service{{Host: "lb.example.net"}}},
		{"a clash", []msg.Service{{Host: "lb.example.net"}, {Host: "10.0.0.2"}, {Text: "v=1"}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			created := func(i int) int64 { return int64(10 - i) }
			b.ReportAllocs()
			for b.Loop() {
				s := &answerSet{services: tc.sx}
				s.applyCNAMERule(created)
			}
		})
	}
}
