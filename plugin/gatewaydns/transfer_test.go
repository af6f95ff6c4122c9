package gatewaydns

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/file"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// transferFixture holds every kind of data a zone can say: the writer's layout (a name and its
// record-id children), records at a name's own key, an in-zone CNAME, a CNAME rule clash,
// SRV, MX, TXT, NS and apex records, a stored wildcard, and names below names.
var transferFixture = []record.KV{
	at(2, "/skydns/test/zone/app/3e6bee2e", `{"host":"10.0.0.1","ttl":60,"targetstrip":1}`),
	at(3, "/skydns/test/zone/app/9a0c11f0", `{"host":"10.0.0.2","ttl":60,"targetstrip":1}`),
	at(4, "/skydns/test/zone/v6/1", `{"host":"2001:db8::1"}`),
	at(5, "/skydns/test/zone/own", `{"host":"10.0.0.3"}`),
	at(6, "/skydns/test/zone/alias/1", `{"host":"app.zone.test","targetstrip":1}`),
	at(7, "/skydns/test/zone/clash/1", `{"host":"10.0.0.4"}`),
	at(8, "/skydns/test/zone/clash/2", `{"host":"app.zone.test"}`),
	at(9, "/skydns/test/zone/txt/1", `{"text":"hello"}`),
	at(10, "/skydns/test/zone/mail/1", `{"host":"10.0.0.5","mail":true,"priority":20}`),
	at(11, "/skydns/test/zone/svc/tcp/_https/1", `{"host":"10.0.0.6","port":443}`),
	at(12, "/skydns/test/zone/dns/ns/ns1", `{"host":"10.0.0.53"}`),
	at(13, "/skydns/test/zone/dns/apex/1", `{"host":"10.0.0.80"}`),
	at(14, "/skydns/test/zone/apps/*/1", `{"host":"10.1.0.1"}`),
	at(15, "/skydns/test/zone/eu1/web/1", `{"host":"10.2.0.1"}`),
	at(16, "/skydns/test/zone/eu1/web/www/1", `{"host":"10.2.0.2"}`),
}

func at(rev int64, key, value string) record.KV {
	return record.KV{Key: key, Value: []byte(value), Revision: rev, Created: rev}
}

func loadedStanza(t *testing.T, stanza string, kvs []record.KV) *GatewayDNS {
	t.Helper()
	cfg, err := parse(caddy.NewTestController("dns", stanza))
	if err != nil {
		t.Fatal(err)
	}
	g, st := newStanza(cfg)
	for _, p := range st.prefixes {
		st.index.Load(p, kvs)
	}
	return g
}

func transferred(t *testing.T, g *GatewayDNS, zone string, serial uint32) []dns.RR {
	t.Helper()
	ch, err := g.Transfer(zone, serial)
	if err != nil {
		t.Fatal(err)
	}
	var rrs []dns.RR
	for batch := range ch {
		rrs = append(rrs, batch...)
	}
	return rrs
}

// With transfer-synthetic, a transfer holds what the plugin answers for each name: SRV records
// of every address (port 0 where none is stored) and the record-id names too.
func TestASyntheticTransferHoldsEachNamesAnswersBetweenTwoSOAs(t *testing.T) {
	g := loadedStanza(t, "gatewaydns zone.test {\n transfer-synthetic\n}", transferFixture)
	rrs := transferred(t, g, "zone.test.", 0)
	got := betweenSOAs(rrs)
	want := []string{
		"*.apps.zone.test. 300 IN A 10.1.0.1",
		"*.apps.zone.test. 300 IN SRV 10 100 0 1.*.apps.zone.test.",
		"1.*.apps.zone.test. 300 IN A 10.1.0.1",
		"1.*.apps.zone.test. 300 IN SRV 10 100 0 1.*.apps.zone.test.",
		"1._https.tcp.svc.zone.test. 300 IN A 10.0.0.6",
		"1._https.tcp.svc.zone.test. 300 IN SRV 10 100 443 1._https.tcp.svc.zone.test.",
		"1.alias.zone.test. 300 IN CNAME app.zone.test.",
		"1.apex.dns.zone.test. 300 IN A 10.0.0.80",
		"1.apex.dns.zone.test. 300 IN SRV 10 100 0 1.apex.dns.zone.test.",
		"1.clash.zone.test. 300 IN A 10.0.0.4",
		"1.clash.zone.test. 300 IN SRV 10 100 0 1.clash.zone.test.",
		"1.mail.zone.test. 300 IN A 10.0.0.5",
		"1.mail.zone.test. 300 IN MX 20 1.mail.zone.test.",
		"1.mail.zone.test. 300 IN SRV 20 100 0 1.mail.zone.test.",
		"1.txt.zone.test. 300 IN TXT \"hello\"",
		"1.v6.zone.test. 300 IN AAAA 2001:db8::1",
		"1.v6.zone.test. 300 IN SRV 10 100 0 1.v6.zone.test.",
		"1.web.eu1.zone.test. 300 IN A 10.2.0.1",
		"1.web.eu1.zone.test. 300 IN SRV 10 100 0 1.web.eu1.zone.test.",
		"1.www.web.eu1.zone.test. 300 IN A 10.2.0.2",
		"1.www.web.eu1.zone.test. 300 IN SRV 10 100 0 1.www.web.eu1.zone.test.",
		"2.clash.zone.test. 300 IN CNAME app.zone.test.",
		"3e6bee2e.app.zone.test. 60 IN A 10.0.0.1",
		"3e6bee2e.app.zone.test. 60 IN SRV 10 100 0 app.zone.test.",
		"9a0c11f0.app.zone.test. 60 IN A 10.0.0.2",
		"9a0c11f0.app.zone.test. 60 IN SRV 10 100 0 app.zone.test.",
		"_https.tcp.svc.zone.test. 300 IN A 10.0.0.6",
		"_https.tcp.svc.zone.test. 300 IN SRV 10 100 443 1._https.tcp.svc.zone.test.",
		"alias.zone.test. 300 IN CNAME app.zone.test.",
		"apex.dns.zone.test. 300 IN A 10.0.0.80",
		"apex.dns.zone.test. 300 IN SRV 10 100 0 1.apex.dns.zone.test.",
		"app.zone.test. 60 IN A 10.0.0.1",
		"app.zone.test. 60 IN A 10.0.0.2",
		"app.zone.test. 60 IN SRV 10 50 0 app.zone.test.",
		"clash.zone.test. 300 IN A 10.0.0.4",
		"clash.zone.test. 300 IN SRV 10 50 0 1.clash.zone.test.",
		"clash.zone.test. 300 IN SRV 10 50 0 app.zone.test.",
		"mail.zone.test. 300 IN A 10.0.0.5",
		"mail.zone.test. 300 IN MX 20 1.mail.zone.test.",
		"mail.zone.test. 300 IN SRV 20 100 0 1.mail.zone.test.",
		"ns.dns.zone.test. 300 IN A 10.0.0.53",
		"ns.dns.zone.test. 300 IN SRV 10 100 0 ns1.ns.dns.zone.test.",
		"ns1.ns.dns.zone.test. 300 IN A 10.0.0.53",
		"ns1.ns.dns.zone.test. 300 IN SRV 10 100 0 ns1.ns.dns.zone.test.",
		"own.zone.test. 300 IN A 10.0.0.3",
		"own.zone.test. 300 IN SRV 10 100 0 own.zone.test.",
		"txt.zone.test. 300 IN TXT \"hello\"",
		"v6.zone.test. 300 IN AAAA 2001:db8::1",
		"v6.zone.test. 300 IN SRV 10 100 0 1.v6.zone.test.",
		"web.eu1.zone.test. 300 IN A 10.2.0.1",
		"web.eu1.zone.test. 300 IN SRV 10 100 0 1.web.eu1.zone.test.",
		"www.web.eu1.zone.test. 300 IN A 10.2.0.2",
		"www.web.eu1.zone.test. 300 IN SRV 10 100 0 1.www.web.eu1.zone.test.",
		"zone.test. 300 IN A 10.0.0.80",
		"zone.test. 300 IN NS ns1.ns.dns.zone.test.",
		"zone.test. 300 IN SRV 10 100 0 own.zone.test.",
	}
	sameTransfer(t, got, want)
	first, last := rrs[0].(*dns.SOA), rrs[len(rrs)-1].(*dns.SOA)
	if first.Serial != 16 || last.Serial != 16 {
		t.Errorf("SOA serials %d and %d, want 16, the last change's revision", first.Serial, last.Serial)
	}
}

// sameTransfer fails t unless a transfer's records (betweenSOAs) are want, in order.
func sameTransfer(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("transfer:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// betweenSOAs is a transfer's records but its first and last (the SOAs), as sorted text.
func betweenSOAs(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs[1 : len(rrs)-1] {
		out = append(out, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	slices.Sort(out)
	return out
}

func TestIXFRFromACurrentSerialIsTheSOAAloneAndFromAnOlderOneTheWholeZone(t *testing.T) {
	g := loadedStanza(t, "gatewaydns zone.test", transferFixture)
	full := len(transferred(t, g, "zone.test.", 0))
	for _, tt := range []struct {
		serial uint32
		want   int
	}{{16, 1}, {17, 1}, {15, full}, {16 + 1<<31 + 1, full}} {
		if got := len(transferred(t, g, "zone.test.", tt.serial)); got != tt.want {
			t.Errorf("IXFR from %d: %d records, want %d", tt.serial, got, tt.want)
		}
	}
	if _, err := g.Transfer("other.test.", 0); err == nil {
		t.Error("a transfer of a zone the stanza does not serve did not fail")
	}
}

// The point of exact names: a plain zone made of the synthetic transfer, served by the stock file
// plugin, answers every name and every question as the plugin does.
func TestAZoneLoadedFromTheTransferAnswersAsExactNames(t *testing.T) {
	g := loadedStanza(t, "gatewaydns zone.test {\n exact-names\n transfer-synthetic\n}", transferFixture)
	z := file.NewZone("zone.test.", "")
	for _, rr := range transferred(t, g, "zone.test.", 0)[1:] {
		if err := z.Insert(rr); err != nil {
			t.Fatal(err)
		}
	}
	f := file.File{Zones: file.Zones{Z: map[string]*file.Zone{"zone.test.": z}, Names: []string{"zone.test."}}}
	cnames := map[string]bool{"alias.zone.test.": true, "1.alias.zone.test.": true, "2.clash.zone.test.": true}
	names := []string{"zone.test.", "nothere.zone.test.", "x.apps.zone.test.", "eu1.zone.test.", "dns.zone.test."}
	for _, kv := range transferFixture {
		names = append(names, msgDomain(kv.Key))
		if i := strings.LastIndexByte(kv.Key, '/'); i > 0 {
			names = append(names, msgDomain(kv.Key[:i]))
		}
	}
	for _, name := range names {
		for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeSRV, dns.TypeTXT, dns.TypeMX, dns.TypeNS, dns.TypeSOA} {
			if cnames[name] && qtype != dns.TypeA && qtype != dns.TypeCNAME {
				// A zone's CNAME answers every type; the plugin answers SRV with the name host
				// as target, and other types only if the target has them (README).
				continue
			}
			want, got := answer(t, g, name, qtype), answer(t, f, name, qtype)
			if got != want {
				t.Errorf("%s %s:\nsecondary %s\nprimary   %s", name, dns.TypeToString[qtype], got, want)
			}
		}
	}
}

// Off by default, so that the stock etcd plugin's answers stay the default: a name answers
// with its whole subtree (web.eu1 with www.web.eu1's address too), as the etcd plugin does;
// with exact-names, with its own key's and record-id children's records only.
func TestExactNamesAreOffByDefault(t *testing.T) {
	for _, tc := range []struct{ stanza, want string }{
		{"gatewaydns zone.test", "NOERROR answer [web.eu1.zone.test. 300 IN A 10.2.0.1; web.eu1.zone.test. 300 IN A 10.2.0.2] ns []"},
		{"gatewaydns zone.test {\n exact-names\n}", "NOERROR answer [web.eu1.zone.test. 300 IN A 10.2.0.1] ns []"},
	} {
		g := loadedStanza(t, tc.stanza, transferFixture)
		if got := answer(t, g, "web.eu1.zone.test.", dns.TypeA); got != tc.want {
			t.Errorf("%q: web.eu1.zone.test. A:\n got %s\nwant %s", tc.stanza, got, tc.want)
		}
	}
}

func msgDomain(key string) string {
	parts := strings.Split(strings.TrimPrefix(key, "/skydns/"), "/")
	slices.Reverse(parts)
	return strings.Join(parts, ".") + "."
}

type handler interface {
	ServeDNS(context.Context, dns.ResponseWriter, *dns.Msg) (int, error)
}

// answer is a reply as a comparable string: rcode, and each section's records, sorted.
func answer(t *testing.T, h handler, name string, qtype uint16) string {
	t.Helper()
	req := new(dns.Msg)
	req.SetQuestion(name, qtype)
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	if _, err := h.ServeDNS(context.Background(), rec, req); err != nil || rec.Msg == nil {
		t.Fatalf("%s %d: %v", name, qtype, err)
	}
	section := func(rrs []dns.RR) string {
		var s []string
		for _, rr := range rrs {
			s = append(s, strings.ReplaceAll(rr.String(), "\t", " "))
		}
		slices.Sort(s)
		return strings.Join(s, "; ")
	}
	m := rec.Msg
	if len(m.Answer) > 0 {
		m.Ns = nil // the file plugin adds the zone's NS records to an answer, the etcd plugin not
	}
	return fmt.Sprintf("%s answer [%s] ns [%s]", dns.RcodeToString[m.Rcode], section(m.Answer), section(m.Ns))
}

// BenchmarkTransfer100k is one AXFR of 100k names in the writers' layout, from the copy to the
// last record handed to the transfer plugin (which then only frames them).
func BenchmarkTransfer100k(b *testing.B) {
	cfg, err := parse(caddy.NewTestController("dns", "gatewaydns openmcp.cluster"))
	if err != nil {
		b.Fatal(err)
	}
	g, st := newStanza(cfg)
	kvs := make([]record.KV, 0, 100000)
	for i := range 100000 {
		kvs = append(kvs, record.KV{Key: fmt.Sprintf("/skydns/cluster/openmcp/c%d/app%d/3e6bee2e", i%7, i),
			Value: []byte(fmt.Sprintf(`{"host":"10.%d.%d.%d","ttl":60,"targetstrip":1}`, i/65536, i/256%256, i%256)), Revision: int64(i + 2)})
	}
	for _, p := range st.prefixes {
		st.index.Load(p, kvs)
	}
	b.ReportAllocs()
	for b.Loop() {
		ch, err := g.Transfer("openmcp.cluster.", 0)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rrs := range ch {
			n += len(rrs)
		}
		b.ReportMetric(float64(n), "records")
	}
}

// Plain names skip the six lookups of zoneRecords (zoneWriter.appendName): their records,
// in order, must be zoneRecords' own, whatever the services say.
func TestPlainNamesTransferAsTheLookupsMakeThem(t *testing.T) {
	kvs := slices.Clone(transferFixture)
	for i, v := range []string{
		`{"host":"10.3.0.1","port":8080,"weight":30,"priority":5}`,
		`{"host":"10.3.0.2","port":8080,"weight":70,"priority":5}`,
		`{"host":"10.3.0.1","port":8081}`,
		`{"host":"2001:db8::3","ttl":5,"targetstrip":1}`,
		`{"host":"10.3.0.3","port":-1}`,
		`{"host":"10.3.0.4","group":"g1"}`,
		`{"host":"10.3.0.5","group":"g2","text":"not a TXT: the host is an address"}`,
		`{"host":"::ffff:10.3.0.6"}`,
	} {
		kvs = append(kvs, at(int64(20+i), fmt.Sprintf("/skydns/test/zone/mixed/%d", i), v))
		kvs = append(kvs, at(int64(40+i), fmt.Sprintf("/skydns/test/zone/own%d", i), v))
	}
	kvs = append(kvs, at(60, "/skydns/test/zone/mixed/sub/1", `{"host":"10.3.1.1"}`),
		at(61, "/skydns/test/zone/grp/1", `{"host":"10.3.2.1","group":"a"}`),
		at(62, "/skydns/test/zone/grp/2", `{"host":"app.zone.test","group":"b"}`),
		at(63, "/skydns/test/zone/grp2/1", `{"host":"10.3.2.2","group":"a"}`),
		at(64, "/skydns/test/zone/grp2/2", `{"host":"10.3.2.3","group":"b"}`))
	for _, stanza := range []string{"gatewaydns zone.test", "gatewaydns zone.test {\n exact-names\n}"} {
		g := loadedStanza(t, stanza, kvs)
		z, ok := g.current().Zone("zone.test.", nil)
		if !ok {
			t.Fatal("not loaded")
		}
		opt := plugin.Options{NoApexFallback: g.NoApexFallback}
		x := newZoneWriter(z, newApex(), false, true, opt)
		plain := 0
		for i := range z.Len() {
			name := z.Name(i)
			if _, _, _, ok := z.Plain(i); !ok || name == z.Origin {
				continue
			}
			plain++
			want := zoneRecords(z, newApex(), name, false, opt)
			oneTTLPerRRset(want) // as a transfer holds an RRset
			got := x.appendName(nil, i)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s:\n got %v\nwant %v", name, got, want)
			}
		}
		if plain < 20 {
			t.Errorf("%d plain names, want most of them", plain)
		}
	}
}

// TestTransferPacingGivesWayOnlyToQueries pins when a transfer sleeps: after xfrSlice of work
// while questions come in, never on a server nobody queries (a quiet primary NOTIFYing its
// secondaries sends them the zone at full speed), nor once its stanza stopped.
func TestTransferPacingGivesWayOnlyToQueries(t *testing.T) {
	for _, tc := range []struct {
		name       string
		queriedAgo time.Duration // 0: never queried
		workedAgo  time.Duration
		stopped    bool
		wantSleep  bool
	}{
		{name: "queried just now, a work slice done: sleeps", queriedAgo: time.Millisecond, workedAgo: 2 * xfrSlice, wantSleep: true},
		{name: "queried just now, the slice not done yet: goes on", queriedAgo: time.Millisecond, workedAgo: 0},
		{name: "last query longer ago than xfrQuiet: goes on", queriedAgo: 2 * xfrQuiet, workedAgo: 2 * xfrSlice},
		{name: "never queried: goes on", workedAgo: 2 * xfrSlice},
		{name: "queried just now, but the stanza stopped: goes on", queriedAgo: time.Millisecond, workedAgo: 2 * xfrSlice, stopped: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := lastQuery.Load()
			t.Cleanup(func() { lastQuery.Store(prev) })
			lastQuery.Store(0)
			if tc.queriedAgo > 0 {
				lastQuery.Store(time.Now().Add(-tc.queriedAgo).UnixNano())
			}
			stopped := make(chan struct{})
			if tc.stopped {
				close(stopped)
			}
			p := &pacer{worked: time.Now().Add(-tc.workedAgo), stopped: stopped}
			start := time.Now()
			p.pause()
			slept := time.Since(start) >= 2*xfrSlice*(xfrShare-1) // the slice's time, 15 times
			if slept != tc.wantSleep {
				t.Errorf("slept %v, want %v", slept, tc.wantSleep)
			}
		})
	}
}
