package index

import (
	"errors"
	"fmt"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// A write below a name after the records its cut answer holds leaves the cached answer as it
// is, so that a watch's writes below an ancestor of many names do not make its next question
// read again; a write among those records does.
func TestWriteAfterTheCutKeepsTheCachedAnswer(t *testing.T) {
	ix := New(Options{MaxRecords: 3})
	key := func(i int) string { return fmt.Sprintf("/skydns/test/zone/n%02d/1", i) }
	var kvs []record.KV
	for i := range 20 {
		kvs = append(kvs, kv(key(i), `{"host":"10.0.0.1"}`))
	}
	ix.Load(ix.Root(), kvs)
	zone, _ := ix.tree.walk(ix.tree.root, []string{"test", "zone"})
	ask := func() *answerSet {
		t.Helper()
		if _, cut, err := ix.records("zone.test.", dns.TypeA, false, answered, nil); err != nil || !cut {
			t.Fatalf("cut %v, err %v", cut, err)
		}
		return ix.tree.cached(zone, belowSet)
	}
	cached := ask()
	for _, c := range []record.Change{
		{KV: kv(key(10), `{"host":"10.0.0.2"}`)},
		{KV: kv(key(30), `{"host":"10.0.0.2"}`)},
		{KV: kv(key(11), ""), Deleted: true},
	} {
		ix.Apply([]record.Change{c})
		if set := ask(); set != cached {
			t.Fatalf("a write of %s dropped the answer cut before %s", c.Key, key(3))
		}
	}
	ix.Apply([]record.Change{{KV: kv(key(2), ""), Deleted: true}})
	if set := ask(); set == cached || len(set.services) != 3 || set.services[2].Key != key(3) {
		t.Fatalf("a delete of %s, among the records answered, kept or misread the answer", key(2))
	}
}

// A query wildcard that visits as many nodes as it may without finding a record says so,
// rather than NXDOMAIN or NODATA, which the keys it did not visit may belie.
func TestQueryWildcardThatFindsNothingWithinItsBudgetIsTooBroad(t *testing.T) {
	var kvs []record.KV
	for i := range 100 {
		kvs = append(kvs, kv(fmt.Sprintf("/skydns/test/zone/n%02d/y/1", i), `{"host":"10.0.0.1"}`))
	}
	kvs = append(kvs, kv("/skydns/test/zone/n99/x/1", `{"host":"10.0.0.9"}`))
	for _, tc := range []struct {
		limit int
		want  error
		found int
	}{
		{limit: 1, want: ErrTooBroad},
		{limit: 30, found: 1}, // a budget that reaches n99: two nodes per name
	} {
		ix := New(Options{MaxRecords: tc.limit})
		ix.Load(ix.Root(), kvs)
		sx, _, err := ix.records("x.*.zone.test.", dns.TypeA, false, answered, nil)
		if !errors.Is(err, tc.want) || len(sx) != tc.found {
			t.Errorf("limit %d: %d records, err %v; want %d, %v", tc.limit, len(sx), err, tc.found, tc.want)
		}
	}
}
