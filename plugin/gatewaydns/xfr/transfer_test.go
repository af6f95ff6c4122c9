package xfr

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/zonefixture"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// With transfer-synthetic, a transfer holds what the plugin answers for each name: SRV records
// of every address (port 0 where none is stored) and the record-id names too.
func TestASyntheticTransferHoldsEachNamesAnswersBetweenTwoSOAs(t *testing.T) {
	g := loaded(t, stanza{cfg: Config{Synthetic: true}}, zonefixture.Records)
	rrs := zonefixture.Transferred(t, g, "zone.test.", 0)
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
		// The apex's SRV answer reads apex.dns.<zone> beside the apex's key (answer.ApexServices).
		"zone.test. 300 IN SRV 10 50 0 1.apex.dns.zone.test.",
		"zone.test. 300 IN SRV 10 50 0 own.zone.test.",
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
	g := loaded(t, stanza{}, zonefixture.Records)
	full := len(zonefixture.Transferred(t, g, "zone.test.", 0))
	for _, tt := range []struct {
		serial uint32
		want   int
	}{{16, 1}, {17, 1}, {15, full}, {16 + 1<<31 + 1, full}} {
		if got := len(zonefixture.Transferred(t, g, "zone.test.", tt.serial)); got != tt.want {
			t.Errorf("IXFR from %d: %d records, want %d", tt.serial, got, tt.want)
		}
	}
	if _, err := g.Transfer("other.test.", 0); err == nil {
		t.Error("a transfer of a zone the stanza does not serve did not fail")
	}
}

// BenchmarkTransfer100k is one AXFR of 100k names in the writers' layout, from the copy to the
// last record handed to the transfer plugin (which then only frames them).
func BenchmarkTransfer100k(b *testing.B) {
	kvs := make([]record.KV, 0, 100000)
	for i := range 100000 {
		kvs = append(kvs, record.KV{Key: fmt.Sprintf("/skydns/cluster/openmcp/c%d/app%d/3e6bee2e", i%7, i),
			Value: []byte(fmt.Sprintf(`{"host":"10.%d.%d.%d","ttl":60,"targetstrip":1}`, i/65536, i/256%256, i%256)), Revision: int64(i + 2)})
	}
	g := loaded(b, stanza{zones: []string{"openmcp.cluster."}}, kvs)
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
	kvs := slices.Clone(zonefixture.Records)
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
		kvs = append(kvs, zonefixture.At(int64(20+i), fmt.Sprintf("/skydns/test/zone/mixed/%d", i), v))
		kvs = append(kvs, zonefixture.At(int64(40+i), fmt.Sprintf("/skydns/test/zone/own%d", i), v))
	}
	kvs = append(kvs, zonefixture.At(60, "/skydns/test/zone/mixed/sub/1", `{"host":"10.3.1.1"}`),
		zonefixture.At(61, "/skydns/test/zone/grp/1", `{"host":"10.3.2.1","group":"a"}`),
		zonefixture.At(62, "/skydns/test/zone/grp/2", `{"host":"app.zone.test","group":"b"}`),
		zonefixture.At(63, "/skydns/test/zone/grp2/1", `{"host":"10.3.2.2","group":"a"}`),
		zonefixture.At(64, "/skydns/test/zone/grp2/2", `{"host":"10.3.2.3","group":"b"}`))
	for _, exact := range []bool{false, true} {
		g := loaded(t, stanza{exact: exact}, kvs)
		z, ok := g.ix.Zone("zone.test.", nil)
		if !ok {
			t.Fatal("not loaded")
		}
		opt := g.st.Options
		x := newZoneWriter(z, answer.NewApex(), false, true, opt)
		plain := 0
		for i := range z.Len() {
			name := z.Name(i)
			if _, _, _, ok := z.Plain(i); !ok || name == z.Origin {
				continue
			}
			plain++
			want := zoneRecords(z, answer.NewApex(), name, false, opt)
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
