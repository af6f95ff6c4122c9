package index

import (
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

func TestSerialFollowsTheLastChangeOfEachZoneAndNeverGoesBack(t *testing.T) {
	ix := New(Options{Prefixes: []string{"/skydns/test/a/", "/skydns/test/b/"}})
	at := func(rev int64, key string) record.KV {
		return record.KV{Key: key, Value: []byte(`{"host":"10.0.0.1"}`), Revision: rev}
	}
	serials := func() [2]uint32 { return [2]uint32{ix.Serial(query("a.test.", 1)), ix.Serial(query("x.b.test.", 1))} }
	steps := []struct {
		name string
		do   func()
		want [2]uint32
	}{
		{"loads: the newest key, invalid ones too", func() {
			ix.Load("/skydns/test/a/", []record.KV{at(3, "/skydns/test/a/x"), {Key: "/skydns/test/a/bad", Value: []byte("{"), Revision: 5}})
			ix.Load("/skydns/test/b/", []record.KV{at(4, "/skydns/test/b/y")})
		}, [2]uint32{5, 4}},
		{"a delete in one zone", func() {
			ix.Apply([]record.Change{{KV: record.KV{Key: "/skydns/test/b/y", Revision: 9}, Deleted: true}})
		}, [2]uint32{5, 9}},
		{"a delete replayed after a load", func() { ix.Replayed("/skydns/test/a/", 7) }, [2]uint32{7, 9}},
		{"a reload that sees only older keys", func() { ix.Load("/skydns/test/b/", nil) }, [2]uint32{7, 9}},
		{"a put of an invalid value", func() {
			ix.Apply([]record.Change{{KV: record.KV{Key: "/skydns/test/a/bad", Value: []byte("{"), Revision: 11}}})
		}, [2]uint32{11, 9}},
		{"a key outside both zones", func() { ix.Apply([]record.Change{{KV: at(12, "/skydns/test/c/z")}}) }, [2]uint32{11, 9}},
	}
	for _, s := range steps {
		s.do()
		if got := serials(); got != s.want {
			t.Fatalf("after %s: serials %v, want %v", s.name, got, s.want)
		}
	}
}

func TestSerialsCompareInRFC1982Arithmetic(t *testing.T) {
	for _, tc := range []struct {
		a, b uint32
		want bool
	}{
		{2, 1, true},
		{1, 2, false},
		{1, 1, false},
		{0, 0xffffffff, true},          // the wrap is a step forward
		{0xffffffff, 0, false},         // and not back
		{1 << 31, 0, false},            // exactly half way: undefined, never "after"
		{1<<31 - 1, 0, true},           // just under half way
		{0, 1<<31 + 1, true},           // just past it, from the other side
		{100, 100 + 1<<31 + 1, true},   //
		{100 + 1<<31 + 1, 100, false},  //
		{0x80000001, 0x7fffffff, true}, // across the sign bit
	} {
		if got := SerialAfter(tc.a, tc.b); got != tc.want {
			t.Errorf("SerialAfter(%d, %d) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
