package xfr

import (
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/zonefixture"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

func rrMap(t *testing.T, rrs ...string) map[string]dns.RR {
	t.Helper()
	m := map[string]dns.RR{}
	for _, s := range rrs {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		m[rr.String()] = rr
	}
	return m
}

func TestTheCondensedDiffHoldsEachChangeOnce(t *testing.T) {
	a := "a.zone.test. 300 IN A 10.0.0.1"
	b := "b.zone.test. 300 IN A 10.0.0.2"
	bTTL := "b.zone.test. 60 IN A 10.0.0.2"
	c := "c.zone.test. 300 IN TXT \"x\""
	for _, tc := range []struct {
		name               string
		old, cur           []string
		deleted, added     int
		wantDel, wantAdded string
	}{
		{"no change", []string{a, b}, []string{a, b}, 0, 0, "", ""},
		{"a record added", []string{a}, []string{a, b}, 0, 1, "", b},
		{"a record deleted", []string{a, b}, []string{a}, 1, 0, b, ""},
		{"a TTL changed: the record out and in", []string{a, b}, []string{a, bTTL}, 1, 1, b, bTTL},
		{"one in, one out", []string{a, c}, []string{a, b}, 1, 1, c, b},
	} {
		deleted, added := condensedDiff(rrMap(t, tc.old...), rrMap(t, tc.cur...))
		if len(deleted) != tc.deleted || len(added) != tc.added {
			t.Errorf("%s: %d deleted, %d added, want %d and %d", tc.name, len(deleted), len(added), tc.deleted, tc.added)
			continue
		}
		if tc.wantDel != "" && strings.Join(strings.Fields(deleted[0].String()), " ") != tc.wantDel {
			t.Errorf("%s: deleted %v, want %s", tc.name, deleted[0], tc.wantDel)
		}
		if tc.wantAdded != "" && strings.Join(strings.Fields(added[0].String()), " ") != tc.wantAdded {
			t.Errorf("%s: added %v, want %s", tc.name, added[0], tc.wantAdded)
		}
	}
}

// TestAnIXFRAfterAChangeOfOneRecordAt20kNamesMovesTheChange: a secondary that took the zone
// at serial s asks for an IXFR from s after one record changed: it gets the SOAs and the
// change, not the zone; from a serial the journal does not hold, the whole zone.
func TestAnIXFRAfterAChangeOfOneRecordAt20kNamesMovesTheChange(t *testing.T) {
	kvs := make([]record.KV, 0, 20000)
	for i := range 20000 {
		kvs = append(kvs, zonefixture.At(int64(i+2), fmt.Sprintf("/skydns/test/zone/c%d/app%d/3e6bee2e", i%7, i), fmt.Sprintf(`{"host":"10.%d.%d.%d","ttl":60}`, i/65536, i/256%256, i%256)))
	}
	g := loaded(t, stanza{}, kvs)
	full := zonefixture.Transferred(t, g, "zone.test.", 0)
	taken := full[0].(*dns.SOA).Serial

	g.ix.Apply([]record.Change{{KV: zonefixture.At(30000, "/skydns/test/zone/c3/app3/3e6bee2e", `{"host":"10.9.9.9","ttl":60}`)}})
	ixfr := zonefixture.Transferred(t, g, "zone.test.", taken)
	var soas, others []string
	for _, rr := range ixfr {
		if soa, ok := rr.(*dns.SOA); ok {
			soas = append(soas, fmt.Sprint(soa.Serial))
		} else {
			others = append(others, strings.Join(strings.Fields(rr.String()), " "))
		}
	}
	want := []string{"app3.c3.zone.test. 60 IN A 10.0.0.3", "app3.c3.zone.test. 60 IN A 10.9.9.9"}
	if strings.Join(soas, " ") != "30000 "+fmt.Sprint(taken)+" 30000 30000" || fmt.Sprint(others) != fmt.Sprint(want) {
		t.Errorf("IXFR from %d after a change of one record of %d: SOAs %v, records %v; want SOAs [30000 %d 30000 30000] and %v",
			taken, len(full), soas, others, taken, want)
	}
	if n := len(others); n > 10 {
		t.Errorf("%d records moved, want at most 10", n)
	}
	if got := len(zonefixture.Transferred(t, g, "zone.test.", taken-1)); got != len(full) {
		t.Errorf("IXFR from %d, a serial the journal does not hold: %d records, want the whole zone's %d", taken-1, got, len(full))
	}
	t.Logf("zone of %d records; the IXFR moved %d records and %d SOAs", len(full), len(others), len(soas))
}
