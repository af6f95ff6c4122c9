package index

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// keyModel is what etcd holds: the keys, from which a read's records follow by brute force.
type keyModel map[string]bool

// sorted is the keys that keep, in byte order as an etcd range read returns them.
func (m keyModel) sorted(keep func(key string) bool) []string {
	var out []string
	for k := range m {
		if keep(k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// hasBelow reports whether some key lies below key.
func (m keyModel) hasBelow(key string) bool {
	for k := range m {
		if strings.HasPrefix(k, key+"/") {
			return true
		}
	}
	return false
}

func (m keyModel) exists(key string) bool { return m[key] || m.hasBelow(key) }

// subtree is what the stock plugin reads for the name at key: the keys below it, else its own.
func (m keyModel) subtree(key string) ([]string, bool) {
	below := m.sorted(func(k string) bool { return strings.HasPrefix(k, key+"/") })
	switch {
	case len(below) > 0:
		return below, true
	case m[key]:
		return []string{key}, true
	}
	return nil, false
}

// wildcard is what the stock plugin reads for a question whose path elements below root are
// elems, the one at star being "*" or "any".
func (m keyModel) wildcard(root string, elems []string, star int) ([]string, bool) {
	base := strings.TrimSuffix(root+strings.Join(elems[:star], "/"), "/")
	if star > 0 && !m.exists(base) || star == 0 && len(m) == 0 {
		return nil, false
	}
	return m.sorted(func(k string) bool {
		parts := strings.Split(strings.TrimPrefix(k, root), "/")
		if len(parts) < len(elems) {
			return false
		}
		for i, e := range elems {
			if !isQueryWildcard(e) && parts[i] != e {
				return false
			}
		}
		return true
	}), true
}

// names is what a plain zone holds at the name at key: its own key and the keys one level
// below it that have none below them.
func (m keyModel) names(key string) ([]string, bool) {
	if !m.exists(key) {
		return nil, false
	}
	return m.sorted(func(k string) bool {
		rest, ok := strings.CutPrefix(k, key+"/")
		return k == key || ok && !strings.Contains(rest, "/") && !m.hasBelow(k)
	}), true
}

// treeLabels sort around '/' in every way that matters to key order: a prefix of another, and
// followed by a byte before or after '/'.
var treeLabels = []string{"a", "a-", "a--", "a-b", "a0", "b"}

// Every read that spans a subtree answers with the first records of the keys it spans, in byte
// order, at most MaxRecords of them, and says whether there are more; a cached answer stays
// what a fresh read gives across puts, deletes and reloads of a region of any of its keys.
func TestBoundedReadsAreTheFirstKeysInByteOrder(t *testing.T) {
	for _, exactNames := range []bool{false, true} {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("exact names %v seed %d", exactNames, seed), func(t *testing.T) {
				checkBoundedReads(t, rand.New(rand.NewPCG(seed, 17)), exactNames)
			})
		}
	}
}

func checkBoundedReads(t *testing.T, rng *rand.Rand, exactNames bool) {
	const limit = 3
	ix := New(Options{MaxRecords: limit, ExactNames: exactNames})
	zone := ix.Root() + "t/z"
	randomKey := func() string {
		elems := []string{zone}
		for range 1 + rng.IntN(3) {
			elems = append(elems, treeLabels[rng.IntN(len(treeLabels))])
		}
		return strings.Join(elems, "/")
	}
	value := []byte(`{"host":"10.0.0.1"}`)
	m := keyModel{}
	ix.Load(ix.Root(), nil)
	rev := int64(1)
	for step := range 300 {
		rev++
		switch op := rng.IntN(10); {
		case op < 6: // a watch response of a few changes
			var changes []record.Change
			for range 1 + rng.IntN(3) {
				k := randomKey()
				del := m[k] && rng.IntN(2) == 0
				changes = append(changes, record.Change{KV: record.KV{Key: k, Value: value, Revision: rev}, Deleted: del})
				m[k] = !del
				if del {
					delete(m, k)
				}
			}
			ix.Apply(changes)
		case op < 9: // a load of one region, as a zone's prefix is loaded
			region := strings.Join([]string{zone, treeLabels[rng.IntN(len(treeLabels))]}, "/") + "/"
			var kvs []record.KV
			for k := range m {
				if strings.HasPrefix(k, region) {
					delete(m, k)
				}
			}
			for range rng.IntN(8) {
				if k := randomKey(); strings.HasPrefix(k, region) && !m[k] {
					m[k] = true
					kvs = append(kvs, record.KV{Key: k, Value: value, Revision: rev})
				}
			}
			slices.SortFunc(kvs, func(a, b record.KV) int { return strings.Compare(a.Key, b.Key) })
			ix.Load(region, kvs)
		default: // a load of everything
			var kvs []record.KV
			for _, k := range m.sorted(func(string) bool { return true }) {
				kvs = append(kvs, record.KV{Key: k, Value: value, Revision: rev})
			}
			ix.Load(ix.Root(), kvs)
		}
		checkEveryRead(t, ix, m, exactNames, limit, fmt.Sprintf("step %d", step))
	}
}

// checkEveryRead asks every name of up to three labels below the zone, and query wildcards.
func checkEveryRead(t *testing.T, ix *Index, m keyModel, exactNames bool, limit int, when string) {
	t.Helper()
	var paths [][]string
	var grow func(path []string)
	grow = func(path []string) {
		paths = append(paths, path)
		if len(path) < 5 {
			for _, l := range treeLabels {
				grow(append(slices.Clone(path), l))
			}
		}
	}
	grow([]string{"t", "z"})
	if !exactNames {
		for _, p := range paths[:1+len(treeLabels)] {
			for i := 1; i <= len(p); i++ {
				q := append(slices.Clone(p[:i]), "*")
				paths = append(paths, append(q, p[i:]...), append(slices.Clone(p[:i]), "any", "a"))
			}
		}
	}
	for _, path := range paths {
		labels := slices.Clone(path)
		slices.Reverse(labels)
		name := dns.Fqdn(strings.Join(labels, "."))
		key := ix.Root() + strings.Join(path, "/")
		var want []string
		var found bool
		star := slices.IndexFunc(path, isQueryWildcard)
		switch {
		case star >= 0:
			want, found = m.wildcard(ix.Root(), path, star)
		case exactNames:
			want, found = m.names(key)
		default:
			want, found = m.subtree(key)
		}
		sx, cut, err := ix.records(name, dns.TypeTXT, false, everything)
		got := keys(sx)
		switch {
		case !found:
			if err != ErrNotFound {
				t.Fatalf("%s: %s: %q, cut %v, err %v; want NXDOMAIN", when, name, got, cut, err)
			}
		case err != nil:
			t.Fatalf("%s: %s: %v; want %q", when, name, err, want)
		case star >= 0 && cut && len(got) < limit:
			// The walk ran out of budget: what it found are the first records.
			if len(got) > len(want) || !slices.Equal(got, want[:len(got)]) {
				t.Fatalf("%s: %s: %q cut short; want the first of %q", when, name, got, want)
			}
		default:
			wantCut := len(want) > limit
			if wantCut {
				want = want[:limit]
			}
			if !slices.Equal(got, want) || cut != wantCut {
				t.Fatalf("%s: %s: %q, cut %v; want %q, cut %v", when, name, got, cut, want, wantCut)
			}
		}
	}
}

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
	zone, _ := ix.tree.walk([]string{"test", "zone"})
	ask := func() *answerSet {
		t.Helper()
		if _, cut, err := ix.records("zone.test.", dns.TypeA, false, answered); err != nil || !cut {
			t.Fatalf("cut %v, err %v", cut, err)
		}
		return zone.cached(belowSet)
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
		sx, _, err := ix.records("x.*.zone.test.", dns.TypeA, false, answered)
		if !errors.Is(err, tc.want) || len(sx) != tc.found {
			t.Errorf("limit %d: %d records, err %v; want %d, %v", tc.limit, len(sx), err, tc.found, tc.want)
		}
	}
}
