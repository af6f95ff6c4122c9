package index

import (
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/packed"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

func packedIndex(t *testing.T) *Index {
	t.Helper()
	ix := New(Options{Now: func() time.Time { return time.Unix(1e9, 0) }})
	ix.Load(ix.Root(), []record.KV{
		{Key: "/skydns/test/zone/app/1", Value: []byte(`{"host":"10.0.0.1"}`), Revision: 2},
		{Key: "/skydns/test/zone/other/1", Value: []byte(`{"host":"10.0.0.2"}`), Revision: 3},
		{Key: "/skydns/test/zone/alias/1", Value: []byte(`{"host":"app.zone.test"}`), Revision: 4},
		{Key: "/skydns/test/zone/leased/1", Value: []byte(`{"host":"10.0.0.3"}`), Revision: 5, Lease: 9},
		{Key: "/skydns/test/zone/srv/1", Value: []byte(`{"host":"other.zone.test","port":80}`), Revision: 6},
		{Key: "/skydns/test/zone/txt/1", Value: []byte(`{"text":"hello"}`), Revision: 7},
		{Key: "/skydns/test/zone/apps/*/1", Value: []byte(`{"host":"10.0.0.4"}`), Revision: 8},
	})
	return ix
}

const zonePrefix = "/skydns/test/zone/"

func TestPackedRepliesAreKeptForNamesWhoseAnswersAreTheirOwnRecords(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep bool
	}{
		{"app.zone.test.", true},
		{"txt.zone.test.", true},
		{"zone.test.", false}, // its subtree holds a CNAME
		{"alias.zone.test.", false},
		{"leased.zone.test.", false},
		{"srv.zone.test.", false},
		{"x.apps.zone.test.", false}, // a stored wildcard answers it
		{"*.zone.test.", false},      // a query wildcard
	} {
		ix := packedIndex(t)
		p := ix.Packed(tc.name, zonePrefix)
		if got := ix.Keep(p.Ref, tc.name, new(packed.Name)); got != tc.keep {
			t.Errorf("%s: kept %t, want %t", tc.name, got, tc.keep)
		}
		if p := ix.Packed(tc.name, zonePrefix); (p.Name != nil) != tc.keep {
			t.Errorf("%s: packed replies found %t after Keep, want %t", tc.name, p.Name != nil, tc.keep)
		}
	}
}

func TestAPackedReplyBuiltAcrossAWriteIsNotKept(t *testing.T) {
	ix := packedIndex(t)
	p := ix.Packed("app.zone.test.", zonePrefix)
	// Any write, here to another name: what the reply was built from may be gone.
	ix.Apply([]record.Change{{KV: record.KV{Key: "/skydns/test/zone/other/1", Value: []byte(`{"host":"10.0.0.9"}`), Revision: 10}}})
	if ix.Keep(p.Ref, "app.zone.test.", new(packed.Name)) {
		t.Fatal("a reply built before a write was kept")
	}
}

func TestAWriteDropsThePackedRepliesOfItsNameAndItsAncestorsOnly(t *testing.T) {
	ix := packedIndex(t)
	keep := func(name string) {
		t.Helper()
		if !ix.Keep(ix.Packed(name, zonePrefix).Ref, name, new(packed.Name)) {
			t.Fatalf("%s: not kept", name)
		}
	}
	kept := func(name string) bool { return ix.Packed(name, zonePrefix).Name != nil }
	keep("app.zone.test.")
	keep("txt.zone.test.")
	ix.Apply([]record.Change{{KV: record.KV{Key: "/skydns/test/zone/app/2", Value: []byte(`{"host":"10.0.0.8"}`), Revision: 11}}})
	if kept("app.zone.test.") {
		t.Error("app keeps its packed replies after a record was added to it")
	}
	if !kept("txt.zone.test.") {
		t.Error("txt lost its packed replies to a write to another name")
	}
	keep("app.zone.test.")
	ix.Apply([]record.Change{{KV: record.KV{Key: "/skydns/test/zone/app/2", Revision: 12}, Deleted: true}})
	if kept("app.zone.test.") {
		t.Error("app keeps its packed replies after a record was deleted")
	}
	keep("app.zone.test.")
	ix.Load(zonePrefix, []record.KV{{Key: "/skydns/test/zone/app/1", Value: []byte(`{"host":"10.0.0.7"}`), Revision: 13}})
	if kept("app.zone.test.") {
		t.Error("app keeps its packed replies after a load")
	}
	if p := ix.Packed("txt.zone.test.", zonePrefix); !p.NX {
		t.Error("txt is still there after a load without it")
	}
}
