package index

import (
	"sync/atomic"

	"github.com/coredns/coredns/plugin/etcd/msg"
)

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
	// steer is the records' owners and policies where questions may be answered from a
	// choice among the owners (steerset.go); nil for the union.
	steer *setSteer
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

// rec is a record as a read finds it: its key, and its value.
type rec struct {
	key string
	e   *entry
}

// add adds r, whose host is host (entry.hostName).
func (s *answerSet) add(r rec, host string) {
	e := r.e
	if e.lease != 0 {
		s.addLeased(leasedRecord{pos: len(s.services), lease: e.lease, ttl: e.valueTTL})
	}
	if !e.hasHost() {
		s.hostless = true
	}
	s.services = append(s.services, e.service(r.key, host))
}

// addAll adds recs. The hosts kept as addresses (entry.hostIP4, hostIP6) are written out
// into hosts, not one string each: a set may hold thousands.
func (s *answerSet) addAll(recs []rec, hosts *strs) {
	for _, r := range recs {
		host := r.e.host
		if n := r.e.addressLen(); n > 0 {
			m := hosts.room(n)
			hosts.b = r.e.appendAddress(hosts.b)
			host = hosts.since(m)
		}
		s.add(r, host)
	}
}

// answerSet is what a stock prefix read of the key of id, at the path elems, finds: every
// record strictly below it, or, when there is none, its own; at most limit records, the first
// in key order (walk.go). Nil when neither exists.
func (t *tree) answerSet(id nodeID, elems []string, limit int) *answerSet {
	if s := t.cached(id, belowSet); s != nil {
		return s
	}
	var s *answerSet
	switch n := t.at(id); {
	case !n.leaf():
		r := t.scanBelow(id, elems, nil, limit)
		s = newAnswerSet(r.recs).setCut(r)
	case n.value != nil:
		s = newAnswerSet([]rec{{t.keyOf(elems), n.value}})
	default:
		return nil
	}
	t.cache(id, belowSet, s)
	return s
}

// newAnswerSet is the set of records, sorted by key, with the CNAME rule applied.
func newAnswerSet(recs []rec) *answerSet {
	var s *answerSet
	var hosts strs
	if len(recs) == 1 {
		o := new(oneRecordSet)
		s, hosts = &o.answerSet, strs{b: o.host[:0]}
		s.services = o.one[:0]
	} else {
		s = &answerSet{services: make([]msg.Service, 0, len(recs))}
		size := 0
		for _, r := range recs {
			size += r.e.addressLen()
		}
		hosts = newStrs(size)
	}
	s.addAll(recs, &hosts)
	s.setSteering(newSetSteer(recs))
	s.applyCNAMERule(func(i int) int64 { return recs[i].e.created })
	if s.rare != nil && s.rare.steer != nil && s.rare.ruled != nil {
		s.rare.steer.ruled = true
	}
	return s
}

// oneRecordSet is a set of one record with the record and its host in the same object. Most
// sets are a name's one record (a CNAME, an SRV target's address), read one after the other
// by a question; apart, the set, its record and its host were three cache misses at 100k
// names, not one.
type oneRecordSet struct {
	answerSet
	one  [1]msg.Service
	host [maxAddressLen]byte
}

// exactSet is what an exact read of the key of id, at the path elems, finds; the caller checks
// that there is a value.
func (t *tree) exactSet(id nodeID, elems []string) *answerSet {
	if s := t.cached(id, exactSet); s != nil {
		return s
	}
	s := newAnswerSet([]rec{{t.keyOf(elems), t.at(id).value}})
	t.cache(id, exactSet, s)
	return s
}
