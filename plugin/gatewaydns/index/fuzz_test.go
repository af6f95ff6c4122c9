package index

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/dnscheck"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// fuzzBackend is the index as a plugin.ServiceBackend without upstream: names outside the
// zone resolve to nothing, as they would with no plugin after gatewaydns.
type fuzzBackend struct{ *Index }

func (fuzzBackend) Lookup(context.Context, request.Request, string, uint16) (*dns.Msg, error) {
	return nil, nil
}

var _ plugin.ServiceBackend = fuzzBackend{}

const fuzzZone = "zone.test."

var fuzzFixture = []record.KV{
	kv("/skydns/test/zone/app/3e6bee2e", `{"host":"10.0.0.1"}`),
	kv("/skydns/test/zone/app/9a0c11f0", `{"host":"2001:db8::1"}`),
	kv("/skydns/test/zone/own", `{"host":"10.0.0.3","port":8080}`),
	kv("/skydns/test/zone/cname/1", `{"host":"app.zone.test"}`),
	kv("/skydns/test/zone/loop/1", `{"host":"loop.zone.test"}`),
	kv("/skydns/test/zone/ext/1", `{"host":"www.example.org"}`),
	kv("/skydns/test/zone/txt/1", `{"text":"hello"}`),
	kv("/skydns/test/zone/mail/1", `{"host":"mx.zone.test","mail":true,"priority":5}`),
	kv("/skydns/test/zone/mx/1", `{"host":"10.0.0.9"}`),
	kv("/skydns/test/zone/apps/*/k1", `{"host":"10.1.0.1"}`),
	kv("/skydns/test/zone/deep/a/b/c/d", `{"host":"10.0.0.6"}`),
	kv("/skydns/test/zone/dns/ns/1", `{"host":"10.0.0.53"}`),
	kv("/skydns/arpa/in-addr/10/0/0/1", `{"host":"app.zone.test"}`),
}

// FuzzQuery loads a fixed zone plus fuzzed keys (once in the full load, once as a watch
// change, and a delete), asks Records/Services for a fuzzed name, and builds the whole
// answer as ServeDNS does through CoreDNS's plugin.A/AAAA/TXT/SRV/MX/CNAME/PTR/SOA/NS: nothing
// panics, and the reply packs.
func FuzzQuery(f *testing.F) {
	for _, s := range []struct {
		k1, v1, k2, v2, name string
		qtype                uint16
	}{
		{"/skydns/test/zone/new/1", `{"host":"10.9.9.9"}`, "", "", "new", dns.TypeA},
		{"/skydns/test/zone/app/1", `{"host":"10.9.9.9"}`, "/skydns/test/zone/app/3e6bee2e", "", "app", dns.TypeSRV},
		{"/skydns/test/zone/x/1", `{"text":"` + strings.Repeat("t", 300) + `"}`, "", "", "x", dns.TypeTXT},
		{"/skydns/test/zone/c/1", `{"host":"c.zone.test"}`, "", "", "c", dns.TypeA},
		{"/skydns/test/zone//1", `{"host":"10.0.0.1"}`, "/skydns/test/zone/a//b", `{"host":"10.0.0.2"}`, "", dns.TypeA},
		{"/skydns/test/zone/" + strings.Repeat("d/", 100) + "1", `{"host":"10.0.0.1"}`, "", "", strings.Repeat("d.", 100), dns.TypeA},
		{"/skydns/test/zone/*/1", `{"host":"10.0.0.1"}`, "", "", "*.apps", dns.TypeA},
		{"/skydns/test/zone/u/1", `{"host":"10.0.0.1"}`, "", "", "any.deep", dns.TypeMX},
		{"/skydns/test/zone/m/1", `{"host":"m.zone.test","mail":true}`, "", "", "m", dns.TypeMX},
		{"/skydns/test/zone/cn/1", `{"host":"ext.zone.test"}`, "", "", "cn", dns.TypeCNAME},
		{"/skydns/arpa/in-addr/10/0/0/2", `{"host":"x.zone.test"}`, "", "", "2.0.0.10.in-addr.arpa.", dns.TypePTR},
		{"/skydns/test/zone/h/1", `{"host":"bad\u00ff"}`, "", "", "h", dns.TypeSOA},
		{"/skydns/test/zone/\xff/1", `{"host":"10.0.0.1"}`, "", "", "\xff", dns.TypeNS},
		{"/skydns/test/zone/e/1", `{"host":"10.0.0.1","ttl":4294967295,"port":65535,"priority":65535,"weight":65535}`, "", "", "e", dns.TypeHINFO},
		{"/skydns/test/zone/q/1", `{"host":"q.zone.test","targetstrip":1000}`, "", "", "q", dns.TypeSRV},
		{"/skydns/test/zone/cname/2", `{"host":"10.9.9.9"}`, "/skydns/test/zone/cname/3", `{"host":"ext.zone.test"}`, "cname", dns.TypeA},
		{"/skydns/test/zone/mx/1", `{"host":"m.zone.test","mail":true,"priority":10}`, "/skydns/test/zone/mx/2", `{"host":"10.9.9.9"}`, "mx", dns.TypeA},
		{"/skydns/test/zone/_s/_tcp/n/1", `{"host":"s.zone.test","port":443}`, "/skydns/test/zone/_s/_tcp/n/2", `{"text":"v=1"}`, "n._tcp._s", dns.TypeTXT},
	} {
		f.Add(s.k1, []byte(s.v1), s.k2, []byte(s.v2), s.name, s.qtype)
	}
	f.Fuzz(func(t *testing.T, k1 string, v1 []byte, k2 string, v2 []byte, name string, qtype uint16) {
		// The index as served, and one whose reads stop at two records (walk.go).
		var indexes [2]*Index
		for i, limit := range []int{0, 2} {
			ix := New(Options{MaxRecords: limit})
			ix.Load(ix.Root(), append(append([]record.KV{}, fuzzFixture...), record.KV{Key: k1, Value: v1}))
			ix.Apply([]record.Change{{KV: record.KV{Key: k2, Value: v2}}, {KV: record.KV{Key: k1}, Deleted: len(v2)%2 == 1}})
			indexes[i] = ix
		}

		qname := name
		if !strings.HasSuffix(qname, ".") {
			qname = strings.TrimSuffix(qname+"."+fuzzZone, ".")
			if name == "" {
				qname = fuzzZone
			}
		}
		// Only names a DNS message can carry reach the server: round-trip through the wire.
		q := new(dns.Msg)
		q.SetQuestion(dns.Fqdn(qname), qtype)
		wire, err := q.Pack()
		if err != nil {
			return
		}
		r := new(dns.Msg)
		if err := r.Unpack(wire); err != nil {
			return
		}
		state := request.Request{W: nil, Req: r}
		zone := plugin.Zones([]string{fuzzZone, "in-addr.arpa."}).Matches(state.Name())
		if zone == "" {
			return
		}
		sameFirstRecords(t, indexes[0], indexes[1], state.Name())
		for _, ix := range indexes {
			fuzzAnswer(t, ix, zone, state, r)
		}
	})
}

// sameFirstRecords fails t unless every read of small, whose reads stop at fewer records than
// ix's, finds the first records that ix's finds, and says whether there are more.
func sameFirstRecords(t *testing.T, ix, small *Index, name string) {
	t.Helper()
	for _, exact := range []bool{false, true} {
		all, _, errAll := ix.records(name, dns.TypeTXT, exact, everything)
		first, cut, err := small.records(name, dns.TypeTXT, exact, everything)
		if errors.Is(err, ErrTooBroad) {
			continue // a query wildcard that found nothing within its budget
		}
		if (err == nil) != (errAll == nil) {
			t.Fatalf("Records(%q, exact=%v): error %v where the whole read says %v", name, exact, err, errAll)
		}
		got, whole := keys(first), keys(all)
		limit := small.opts.MaxRecords
		want, wantCut := whole, len(whole) > limit
		if wantCut {
			want = whole[:limit]
		}
		if _, star := small.labels(nil, name); star >= 0 && cut && len(got) < limit {
			want = whole[:min(len(got), len(whole))] // the walk ran out of budget
			wantCut = true
		}
		if !slices.Equal(got, want) || cut != wantCut {
			t.Fatalf("Records(%q, exact=%v): %q, cut %v; the whole read is %q", name, exact, got, cut, whole)
		}
	}
}

// fuzzAnswer asks Records/Services of ix for the question and builds the whole answer as
// ServeDNS does through CoreDNS's plugin.A/AAAA/TXT/SRV/MX/CNAME/PTR/SOA/NS: nothing panics,
// and the reply packs.
func fuzzAnswer(t *testing.T, ix *Index, zone string, state request.Request, r *dns.Msg) {
	t.Helper()
	ctx := context.Background()
	var err error
	for _, exact := range []bool{false, true} {
		sx, err := ix.Records(ctx, state, exact)
		if err != nil && !ix.IsNameError(err) && !errors.Is(err, ErrTooBroad) {
			t.Fatalf("Records(%q, exact=%v): unexpected error %v", state.Name(), exact, err)
		}
		for _, s := range sx {
			if !strings.HasPrefix(s.Key, ix.Root()) {
				t.Fatalf("Records(%q) returned key %q outside %s", state.Name(), s.Key, ix.Root())
			}
		}
	}
	if _, err := ix.Services(ctx, state, false, plugin.Options{}); err != nil && !ix.IsNameError(err) && !errors.Is(err, ErrTooBroad) {
		t.Fatalf("Services(%q): %v", state.Name(), err)
	}

	b := fuzzBackend{ix}
	opt := plugin.Options{}
	var records, extra []dns.RR
	switch state.QType() {
	case dns.TypeA:
		records, _, err = plugin.A(ctx, b, zone, state, nil, opt)
	case dns.TypeAAAA:
		records, _, err = plugin.AAAA(ctx, b, zone, state, nil, opt)
	case dns.TypeTXT:
		records, _, err = plugin.TXT(ctx, b, zone, state, nil, opt)
	case dns.TypeCNAME:
		records, err = plugin.CNAME(ctx, b, zone, state, opt)
	case dns.TypePTR:
		records, err = plugin.PTR(ctx, b, zone, state, opt)
	case dns.TypeMX:
		records, extra, err = plugin.MX(ctx, b, zone, state, opt)
	case dns.TypeSRV:
		records, extra, err = plugin.SRV(ctx, b, zone, state, opt)
	case dns.TypeSOA:
		records, err = plugin.SOA(ctx, b, zone, state, opt)
	case dns.TypeNS:
		records, extra, err = plugin.NS(ctx, b, zone, state, opt)
	default:
		_, _, err = plugin.A(ctx, b, zone, state, nil, opt)
	}
	if ruledQuestion(state.QType()) && dnscheck.CNAMEBesideOtherData(records) {
		t.Fatalf("%s %s: a CNAME beside other data: %v", state.Name(), dns.TypeToString[state.QType()], records)
	}
	if qt := state.QType(); (qt == dns.TypeA || qt == dns.TypeAAAA) && state.Name() != zone {
		sameAddresses(t, ix, state, records, err)
	}
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	if err != nil {
		// As plugin.BackendError does: the SOA in the authority section.
		m.Rcode = dns.RcodeNameError
		m.Ns, _ = plugin.SOA(ctx, b, zone, state, opt)
	}
	m.Answer, m.Extra = records, extra
	if _, err := m.Pack(); err != nil {
		t.Fatalf("%s %s: reply does not pack: %v\n%v", state.Name(), dns.TypeToString[state.QType()], err, m)
	}
	// Truncated to a minimal UDP size, as the server does, it packs too.
	m.Truncate(dns.MinMsgSize)
	if _, err := m.Pack(); err != nil {
		t.Fatalf("%s %s: truncated reply does not pack: %v", state.Name(), dns.TypeToString[state.QType()], err)
	}
}

// sameAddresses fails t unless Addresses, where it answers, says what plugin.A or plugin.AAAA
// said: records and lookupErr.
func sameAddresses(t *testing.T, ix *Index, state request.Request, records []dns.RR, lookupErr error) {
	t.Helper()
	addrs, ok, err := ix.Addresses(state.Name(), state.QType())
	if !ok {
		return
	}
	if (err == nil) != (lookupErr == nil) {
		t.Fatalf("%s %s: Addresses error %v, plugin.A's %v", state.Name(), dns.TypeToString[state.QType()], err, lookupErr)
	}
	same := len(addrs) == len(records)
	for i := 0; same && i < len(addrs); i++ {
		var ip net.IP
		switch rr := records[i].(type) {
		case *dns.A:
			ip = rr.A
		case *dns.AAAA:
			ip = rr.AAAA
		}
		same = ip.Equal(addrs[i].IP) && records[i].Header().Ttl == addrs[i].TTL
	}
	if !same {
		t.Fatalf("%s %s: Addresses %v, plugin.A's records %v", state.Name(), dns.TypeToString[state.QType()], addrs, records)
	}
}
