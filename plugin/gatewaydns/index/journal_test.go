package index

import (
	"fmt"
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// TestTheJournalReachesBackToASerialOnlyWhereItHoldsEveryChangeSince pins which serials an
// IXFR can be made from: the serial is the revision's low 32 bits, compared in RFC 1982
// arithmetic, and the journal must hold every change after it.
func TestTheJournalReachesBackToASerialOnlyWhereItHoldsEveryChangeSince(t *testing.T) {
	const zone = "/skydns/test/zone/"
	filled := func(limit int, revs ...int64) *journal {
		j := &journal{limit: limit}
		for _, rev := range revs {
			j.note(rev, fmt.Sprint(zone, rev), nil)
		}
		return j
	}
	for _, tc := range []struct {
		name   string
		j      *journal
		rev    int64 // the zone's revision now
		serial uint32
		ok     bool
		first  int // where the changes since start
	}{
		{"the serial of the newest change but one", filled(10, 5, 6, 7), 7, 6, true, 2},
		{"an older serial the journal holds", filled(10, 5, 6, 7), 7, 4, true, 0},
		{"the zone's own serial: nothing to send", filled(10, 5, 6, 7), 7, 7, false, 0},
		{"a serial after the zone's (RFC 1982)", filled(10, 5, 6, 7), 7, 8, false, 0},
		{"half the serial space back: undefined", filled(10, 5), 1 << 31, 0, false, 0},
		{"across the wrap of the 32 bits", filled(10, 1<<32-1, 1<<32, 1<<32+1), 1<<32 + 1, 1<<32 - 2, true, 0},
		{"across the wrap, from the newest but one", filled(10, 1<<32-1, 1<<32, 1<<32+1), 1<<32 + 1, 0, true, 2},
		{"no journal", filled(0, 5, 6, 7), 7, 6, false, 0},
		{"a serial from before the bound dropped changes", filled(4, 1, 2, 3, 4, 5, 6), 6, 1, false, 0},
		{"the newest the bound dropped", filled(4, 1, 2, 3, 4, 5, 6), 6, 2, true, 0},
		{"a revision of one transaction", filled(10, 5, 6, 6, 7), 7, 5, true, 1},
	} {
		first, ok := tc.j.since(zone, tc.rev, tc.serial)
		if ok != tc.ok || ok && first != tc.first {
			t.Errorf("%s: since(%d) at revision %d = %d, %v; want %d, %v", tc.name, tc.serial, tc.rev, first, ok, tc.first, tc.ok)
		}
	}
	j := filled(10, 5, 6, 7)
	j.rebase(zone, 6) // a load that read revision 6
	if _, ok := j.since(zone, 7, 5); ok {
		t.Error("an IXFR from before a load, which the journal holds no changes of")
	}
	if _, ok := j.since(zone, 7, 6); !ok {
		t.Error("no IXFR from the load's revision")
	}
	if _, ok := j.since("/skydns/test/other/", 7, 5); !ok {
		t.Error("a load of one zone cut another's journal")
	}
}

// TestAnIXFRFromFurtherBackThanMaxDiffKeysIsTheWholeZone: the difference is built in one read
// lock, so a secondary far behind gets the whole zone, which is copied in chunks.
func TestAnIXFRFromFurtherBackThanMaxDiffKeysIsTheWholeZone(t *testing.T) {
	ix := New(Options{Prefixes: []string{"/skydns/cluster/openmcp/"}})
	ix.Load("/skydns/cluster/openmcp/", []record.KV{writerKV(0, 0)})
	for i := range MaxDiffKeys + 1 {
		kv := writerKV(i, 1)
		kv.Revision = int64(i + 2)
		ix.Apply([]record.Change{{KV: kv}})
	}
	for _, tc := range []struct {
		serial uint32
		ok     bool
	}{{2, true}, {1, false}} { // MaxDiffKeys keys changed after revision 2, one more after 1
		if _, _, ok := ix.ZoneDiff("openmcp.cluster.", tc.serial, nil); ok != tc.ok {
			t.Errorf("ZoneDiff from %d: ok %v, want %v", tc.serial, ok, tc.ok)
		}
	}
}
