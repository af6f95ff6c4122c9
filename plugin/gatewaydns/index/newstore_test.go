package index

import (
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// TestNoIXFRIsMadeAcrossANewStore: after a load of a new store (etcd restored from a snapshot
// that takes its revisions back), a secondary at the serial of the store before gets the whole
// zone once the serial moves on, rather than the new store's changes applied to the old
// store's zone; from a serial of the new store, IXFRs are made again.
func TestNoIXFRIsMadeAcrossANewStore(t *testing.T) {
	const prefix = "/skydns/cluster/openmcp/"
	ix := New(Options{Prefixes: []string{prefix}, JournalChanges: 100})
	at := func(i, gen int, rev int64) record.KV { kv := writerKV(i, gen); kv.Revision = rev; return kv }
	ix.Load(prefix, []record.KV{at(0, 0, 5), at(1, 0, 5)})
	ix.Apply([]record.Change{{KV: at(0, 1, 6)}})
	ix.Apply([]record.Change{{KV: at(1, 1, 7)}})
	if _, _, ok := ix.ZoneDiff("openmcp.cluster.", 6, nil); !ok {
		t.Fatal("no IXFR from 6 within one store")
	}

	l := ix.StartLoad(prefix) // the restored store: revision 3, other values
	l.NewStore()
	l.Add([]record.KV{at(0, 2, 3), at(1, 2, 3)})
	l.Finish(3)
	for rev := int64(4); rev <= 8; rev++ { // the new store's changes, to past the old serial
		ix.Apply([]record.Change{{KV: at(0, int(rev), rev)}})
	}
	if s := ix.ZoneSerial("openmcp.cluster."); s != 8 {
		t.Fatalf("serial %d, want 8", s)
	}
	for _, serial := range []uint32{7, 6} {
		if _, _, ok := ix.ZoneDiff("openmcp.cluster.", serial, nil); ok {
			t.Errorf("an IXFR from %d, a serial of the store before", serial)
		}
		if _, ok := ix.JournalGap("openmcp.cluster.", serial); ok {
			t.Errorf("an IXFR from %d read from etcd's history of the new store", serial)
		}
	}
	ix.Apply([]record.Change{{KV: at(1, 9, 9)}})
	if _, _, ok := ix.ZoneDiff("openmcp.cluster.", 8, nil); !ok {
		t.Error("no IXFR from 8, a serial of the new store")
	}
}
