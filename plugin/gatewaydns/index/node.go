package index

import (
	"sync/atomic"

	"github.com/coredns/coredns/plugin/etcd/msg"
)

// node is one path element of the key tree. Children and value change only under the index's
// write lock; the cached answer sets are filled by readers under the read lock, and dropped by
// the writes that change them (forget).
type node struct {
	children children
	value    *entry
	sets     atomic.Pointer[nodeSets] // nil until a read caches a set here, as most nodes never do
}

// nodeSets are the answer sets cached at a node, by setKind.
type nodeSets [3]atomic.Pointer[answerSet]

type setKind int

const (
	belowSet setKind = iota // what a subtree read of the key returns
	exactSet                // what an exact read of the key returns
	namesSet                // what the name answers with exact names (names.go)
)

// cached is the set of kind k cached at n, nil when none.
func (n *node) cached(k setKind) *answerSet {
	if sets := n.sets.Load(); sets != nil {
		return sets[k].Load()
	}
	return nil
}

// cache keeps set as n's set of kind k; readers that race to do it store the same.
func (n *node) cache(k setKind, set *answerSet) {
	sets := n.sets.Load()
	if sets == nil {
		sets = &nodeSets{}
		if !n.sets.CompareAndSwap(nil, sets) {
			sets = n.sets.Load()
		}
	}
	sets[k].Store(set)
}

// forget drops n's cached set of kind k unless it is cut before key: then a write of key
// changes none of the records it holds, nor that there are more.
func (n *node) forget(k setKind, key string) {
	if sets := n.sets.Load(); sets != nil {
		if s := sets[k].Load(); s != nil && !s.cutBefore(key) {
			sets[k].Store(nil)
		}
	}
}

// drop drops n's cached set of kind k.
func (n *node) drop(k setKind) {
	if sets := n.sets.Load(); sets != nil {
		sets[k].Store(nil)
	}
}

// answerSet is the records of one read, sorted by key as etcd returns them. Every name asked
// for holds one per level of its key, so what few sets need sits behind one pointer.
type answerSet struct {
	services []msg.Service
	hostless bool                      // some record has only text: leave it out unless TXT is asked
	addrs    atomic.Pointer[addresses] // worked out on the first A or AAAA question
	rare     *rareParts                // nil for a set of plain records
}

// rareParts are the parts of an answer set that few sets have.
type rareParts struct {
	leased []leasedRecord // by position, ascending
	// ruled is set only when the records mix a CNAME with other data, or hold two CNAMEs: what
	// A, AAAA, TXT and CNAME questions are answered from instead (cname.go).
	ruled *ruledSets
	// cut: the read stopped at the answer limit, or ran out of budget (walk.go). boundary is
	// the key of the first record it left out, "" when not known.
	cut      bool
	boundary string
}

// cut reports whether the set holds only the first records of its read.
func (s *answerSet) cut() bool { return s.rare != nil && s.rare.cut }

// cutBefore reports whether the set was cut at a known record that sorts before key.
func (s *answerSet) cutBefore(key string) bool {
	return s.cut() && s.rare.boundary != "" && key > s.rare.boundary
}

// setCut marks the set as the first records of a read that went on (scanned).
func (s *answerSet) setCut(r scanned) *answerSet {
	if r.cut {
		if s.rare == nil {
			s.rare = &rareParts{}
		}
		s.rare.cut, s.rare.boundary = true, r.boundary
	}
	return s
}

func (s *answerSet) leased() []leasedRecord {
	if s.rare == nil {
		return nil
	}
	return s.rare.leased
}

func (s *answerSet) ruled() *ruledSets {
	if s.rare == nil {
		return nil
	}
	return s.rare.ruled
}

func (s *answerSet) addLeased(lr leasedRecord) {
	if s.rare == nil {
		s.rare = &rareParts{}
	}
	s.rare.leased = append(s.rare.leased, lr)
}

// leasedRecord marks a record whose TTL follows its lease's remaining life.
type leasedRecord struct {
	pos   int
	lease int64
	ttl   uint32
}

func (s *answerSet) leasedAt(pos int) (leasedRecord, bool) {
	for _, lr := range s.leased() {
		if lr.pos == pos {
			return lr, true
		}
	}
	return leasedRecord{}, false
}

func (s *answerSet) add(e *entry) {
	if e.lease != 0 {
		s.addLeased(leasedRecord{pos: len(s.services), lease: e.lease, ttl: e.valueTTL})
	}
	if e.host == "" {
		s.hostless = true
	}
	s.services = append(s.services, e.service())
}

// answerSet is what a stock prefix read of this key finds: every record strictly below it, or,
// when there is none, its own; at most limit records, the first in key order (walk.go). Nil
// when neither exists.
func (n *node) answerSet(limit int) *answerSet {
	if s := n.cached(belowSet); s != nil {
		return s
	}
	var s *answerSet
	switch {
	case n.children.len() > 0:
		r := scanBelow(n, nil, limit)
		s = newAnswerSet(r.entries).setCut(r)
	case n.value != nil:
		s = newAnswerSet([]*entry{n.value})
	default:
		return nil
	}
	n.cache(belowSet, s)
	return s
}

// newAnswerSet is the set of entries, sorted by key, with the CNAME rule applied.
func newAnswerSet(entries []*entry) *answerSet {
	s := &answerSet{services: make([]msg.Service, 0, len(entries))}
	for _, e := range entries {
		s.add(e)
	}
	s.applyCNAMERule(func(i int) int64 { return entries[i].created })
	return s
}

// exactSet is what an exact read of this key finds; the caller checks that there is a value.
func (n *node) exactSet() *answerSet {
	if s := n.cached(exactSet); s != nil {
		return s
	}
	s := newAnswerSet([]*entry{n.value})
	n.cache(exactSet, s)
	return s
}
