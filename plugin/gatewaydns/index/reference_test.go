package index

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// reference is the index's read algorithm as it was before reads were bounded and the tree
// ordered, kept as a test oracle: a read collects every record it spans from a plain list of
// what etcd holds, sorts them by key, and keeps the first MaxRecords. The answer is then
// shaped by the code the index shares with it (newAnswerSet, finish, addresses).
type reference struct {
	ix     *Index // its options, decoder, labels and leases
	kvs    map[string]record.KV
	sorted []rec // the values of kvs that decode, by key: refresh after a change
}

func (r *reference) refresh() {
	r.sorted = r.sorted[:0]
	for _, kv := range r.kvs {
		if e, err := r.ix.decode(kv); err == nil {
			r.sorted = append(r.sorted, rec{kv.Key, e})
		}
	}
	slices.SortFunc(r.sorted, func(a, b rec) int { return strings.Compare(a.key, b.key) })
}

// node reports whether the tree has a node at the path elements: a key there or below.
func (r *reference) node(elems []string) bool {
	key := r.ix.root + strings.Join(elems, "/")
	for _, e := range r.sorted {
		if e.key == key || strings.HasPrefix(e.key, key+"/") {
			return true
		}
	}
	return false
}

// entries is the records of the keys that keep, in key order.
func (r *reference) entries(keep func(key string, elems []string) bool) []rec {
	var out []rec
	for _, e := range r.sorted {
		if keep(e.key, r.ix.elements(e.key)) {
			out = append(out, e)
		}
	}
	return out
}

// read is what a read of the question's name finds, before the limit: the records, whether
// the name exists, and whether it is a query wildcard read.
func (r *reference) read(name string, exact bool) (found []rec, ok, wildcard bool) {
	labels, star := r.ix.labels(nil, name)
	if star >= 0 {
		if star > 0 && !r.node(labels[:star]) || star == 0 && len(r.kvs) == 0 {
			return nil, false, true
		}
		return r.entries(func(_ string, elems []string) bool {
			if len(elems) < len(labels) {
				return false
			}
			for i, l := range labels {
				if !isQueryWildcard(l) && elems[i] != l {
					return false
				}
			}
			return true
		}), true, true
	}
	path := labels
	if !r.node(path) {
		// RFC 4592: the "*" below the deepest node on the way.
		depth := len(path) - 1
		for depth > 0 && !r.node(path[:depth]) {
			depth--
		}
		path = append(slices.Clone(path[:depth]), "*")
		if !r.node(path) {
			return nil, false, false
		}
	}
	key := strings.TrimSuffix(r.ix.root+strings.Join(path, "/"), "/")
	own := r.entries(func(k string, _ []string) bool { return k == key })
	below := func(k string) bool { return strings.HasPrefix(k, key+"/") }
	hasBelow := func(k string) bool {
		return len(r.entries(func(j string, _ []string) bool { return strings.HasPrefix(j, k+"/") })) > 0
	}
	switch {
	case exact:
		return own, len(own) > 0, false
	case r.ix.opts.ExactNames:
		leaves := r.entries(func(k string, elems []string) bool {
			return below(k) && len(elems) == len(path)+1 && !hasBelow(k)
		})
		return append(own, leaves...), true, false
	}
	if all := r.entries(func(k string, _ []string) bool { return below(k) }); len(all) > 0 {
		return all, true, false
	}
	return own, len(own) > 0, false
}

// records is the reference's answer to what Index.records answers.
func (r *reference) records(name string, qtype uint16, exact bool, v view) (sx []msg.Service, cut, wildcard bool, err error) {
	found, ok, wildcard := r.read(name, exact)
	if !ok {
		return nil, false, wildcard, ErrNotFound
	}
	if limit := r.ix.opts.MaxRecords; len(found) > limit {
		found, cut = found[:limit], true
	}
	return finish(newAnswerSet(found), qtype, v, r.ix.leaseTTLs(r.ix.leases)), cut, wildcard, nil
}

// referenceValues are values of every kind the answers tell apart.
var referenceValues = []string{
	`{"host":"10.0.0.1"}`,
	`{"host":"10.0.0.2","ttl":60}`,
	`{"host":"10.0.0.1","ttl":90}`,
	`{"host":"2001:db8::1"}`,
	`{"host":"10.0.0.3","group":"g1"}`,
	`{"host":"10.0.0.4","group":"g2"}`,
	`{"host":"a.zone.test"}`,
	`{"host":"b.zone.test","ttl":30}`,
	`{"host":"s.zone.test","port":443}`,
	`{"text":"hello"}`,
	`{"host":"10.0.0.5","text":"both"}`,
	`{"host":"mx.zone.test","mail":true,"priority":5}`,
	`{"host":"10.0.0.6","port":8080,"weight":30}`,
	`{"host":"bad host"}`,
	`{"host":"10.0.0.7","ttl":4000}`,
}

// referenceLabels make keys at several depths, a stored wildcard, and names that sort around
// each other's subtrees in every way that matters to key order: a prefix of another, followed
// by a byte before or after '/'.
var referenceLabels = []string{"a", "a-", "a--", "a-b", "a0", "b", "*"}

// The index answers every question as the reference does, over random watch changes, leases
// and loads, with and without exact names, with reads cut at a few records and not.
func TestIndexAnswersAsTheReference(t *testing.T) {
	for _, exactNames := range []bool{false, true} {
		for _, limit := range []int{3, 0} {
			for seed := range uint64(2) {
				t.Run(fmt.Sprintf("exact names %v limit %d seed %d", exactNames, limit, seed), func(t *testing.T) {
					checkAgainstReference(t, rand.New(rand.NewPCG(seed, 5)), exactNames, limit)
				})
			}
		}
	}
}

func checkAgainstReference(t *testing.T, rng *rand.Rand, exactNames bool, limit int) {
	now := time.Unix(1_800_000_000, 0)
	ix := New(Options{MaxRecords: limit, ExactNames: exactNames, Now: func() time.Time { return now }})
	ix.SetLeaseExpiry(7, now.Add(100*time.Second))
	ix.SetLeaseExpiry(8, now.Add(-time.Second))
	ref := &reference{ix: ix, kvs: map[string]record.KV{}}
	zone := ix.Root() + "test/zone"
	rev := int64(1)
	randomKV := func() record.KV {
		elems := []string{zone}
		for range 1 + rng.IntN(3) {
			elems = append(elems, referenceLabels[rng.IntN(len(referenceLabels))])
		}
		rev++
		kv := record.KV{Key: strings.Join(elems, "/"), Value: []byte(referenceValues[rng.IntN(len(referenceValues))]),
			Revision: rev, Created: rev - int64(rng.IntN(3)), Lease: []int64{0, 0, 0, 7, 8}[rng.IntN(5)]}
		if old, ok := ref.kvs[kv.Key]; ok {
			kv.Created = old.Created
		}
		return kv
	}
	ix.Load(ix.Root(), nil)
	for step := range 120 {
		switch op := rng.IntN(10); {
		case op < 7:
			var changes []record.Change
			for range 1 + rng.IntN(4) {
				kv := randomKV()
				if _, ok := ref.kvs[kv.Key]; ok && rng.IntN(3) == 0 {
					changes = append(changes, record.Change{KV: record.KV{Key: kv.Key, Revision: kv.Revision}, Deleted: true})
					delete(ref.kvs, kv.Key)
					continue
				}
				changes = append(changes, record.Change{KV: kv})
				ref.kvs[kv.Key] = kv
			}
			ix.Apply(changes)
			ref.refresh()
		default:
			region := zone + "/" + referenceLabels[rng.IntN(len(referenceLabels))] + "/"
			if op == 9 {
				region = ix.Root()
			}
			for k := range ref.kvs {
				if strings.HasPrefix(k, region) {
					delete(ref.kvs, k)
				}
			}
			for range rng.IntN(10) {
				if kv := randomKV(); strings.HasPrefix(kv.Key, region) {
					ref.kvs[kv.Key] = kv
				}
			}
			var kvs []record.KV
			for _, kv := range ref.kvs {
				if strings.HasPrefix(kv.Key, region) {
					kvs = append(kvs, kv)
				}
			}
			slices.SortFunc(kvs, func(a, b record.KV) int { return strings.Compare(a.Key, b.Key) })
			ix.Load(region, kvs)
			ref.refresh()
		}
		checkQuestionsAgainstReference(t, ix, ref, rng, fmt.Sprintf("step %d", step))
	}
}

// checkQuestionsAgainstReference asks every name of up to two labels below the zone and some of
// three, with query wildcards, of every kind of question.
func checkQuestionsAgainstReference(t *testing.T, ix *Index, ref *reference, rng *rand.Rand, when string) {
	t.Helper()
	labels := append(slices.Clone(referenceLabels), "any", "x")
	names := []string{"zone.test."}
	for _, a := range labels {
		names = append(names, a+".zone.test.")
		for _, b := range labels {
			names = append(names, b+"."+a+".zone.test.")
			names = append(names, labels[rng.IntN(len(labels))]+"."+b+"."+a+".zone.test.")
		}
	}
	for _, name := range names {
		for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeCNAME, dns.TypeSRV} {
			for _, exact := range []bool{false, true} {
				for _, v := range []view{answered, everything} {
					want, wantCut, wildcard, wantErr := ref.records(name, qtype, exact, v)
					got, cut, err := ix.records(name, qtype, exact, v, nil)
					what := fmt.Sprintf("%s: %s %s exact %v view %d", when, name, dns.TypeToString[qtype], exact, v)
					if wildcard && (errors.Is(err, ErrTooBroad) || cut && !wantCut) {
						// The walk ran out of budget: what it found are the first records.
						if err == nil && v == everything && (len(got) > len(want) || !slices.Equal(got, want[:len(got)])) {
							t.Fatalf("%s: cut short\n got %v\nwant the first of %v", what, keys(got), keys(want))
						}
						continue
					}
					if !errors.Is(err, wantErr) || !slices.Equal(got, want) || cut != wantCut {
						t.Fatalf("%s:\n got %v cut %v err %v\nwant %v cut %v err %v", what, keys(got), cut, err, keys(want), wantCut, wantErr)
					}
				}
			}
			if qtype == dns.TypeA || qtype == dns.TypeAAAA {
				checkAddressesAgainstReference(t, ix, ref, name, qtype, when)
			}
		}
	}
}

// checkAddressesAgainstReference fails t unless Addresses, where it answers, gives what the
// reference's set gives.
func checkAddressesAgainstReference(t *testing.T, ix *Index, ref *reference, name string, qtype uint16, when string) {
	t.Helper()
	got, ok, err := ix.Addresses(name, qtype)
	if !ok {
		return
	}
	found, exists, wildcard := ref.read(name, false)
	if wildcard {
		t.Fatalf("%s: Addresses(%s) answers a query wildcard", when, name)
	}
	if !exists {
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: Addresses(%s): err %v, want NXDOMAIN", when, name, err)
		}
		return
	}
	found = found[:min(len(found), ix.opts.MaxRecords)]
	a := newAnswerSet(found).forQuestion(qtype).addresses()
	want := a.v4
	if qtype == dns.TypeAAAA {
		want = a.v6
	}
	if err != nil || !a.plain || !slices.EqualFunc(got, want, func(x, y Address) bool { return x.IP.Equal(y.IP) && x.TTL == y.TTL }) {
		t.Fatalf("%s: Addresses(%s %s) = %v, %v; the reference's %v (plain %v)", when, name, dns.TypeToString[qtype], got, err, want, a.plain)
	}
}
