package index

import (
	"sync"
	"sync/atomic"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/packed"
)

// The answer sets that readers cache are found by node id in a table of chunks, one slot per
// node, as the nodes are in their arena: a question for a CNAME or an SRV name reads two or
// three sets, and a hash map's path to each (a sync.Map is a trie of several levels) was as
// many cache misses again, which at 100k names cost those questions about an eighth of their
// time (BenchmarkServeDNSMix, cname and srv parts). A chunk
// is made when a set is first cached at one of its nodes; a slot holds 8 bytes.

// nodeSets are the answer sets cached at a node, by setKind, and the name's packed replies
// (packed.go), which every write that drops one of its sets drops too.
type nodeSets struct {
	sets   [3]atomic.Pointer[answerSet]
	packed atomic.Pointer[packed.Name]
	// steer is the steering of the name's set (belowSet or namesSet), where it has one, and
	// probe its choice as a probe last prepared it: what a probe reads of a steered name
	// (steerpacked.go), one load away.
	steer atomic.Pointer[setSteer]
	probe atomic.Pointer[choiceProbe]
}

type setKind int

const (
	belowSet setKind = iota // what a subtree read of the key returns
	exactSet                // what an exact read of the key returns
	namesSet                // what the name answers with exact names (names.go)
)

// setChunk is the slots of arenaChunkLen node ids.
type setChunk [arenaChunkLen]atomic.Pointer[nodeSets]

// setTable holds each node's nodeSets by its id. Readers cache sets under the index's read
// lock, so slots are atomic, and chunks are added under the table's own lock, to a copy of the
// chunk list that is then published: a reader holds the old list, whose chunks are the same.
type setTable struct {
	mu     sync.Mutex
	chunks atomic.Pointer[[]*setChunk]
}

// slot is id's slot, nil when its chunk was never made.
func (st *setTable) slot(id nodeID) *atomic.Pointer[nodeSets] {
	p := st.chunks.Load()
	if p == nil {
		return nil
	}
	chunks, c := *p, int(id>>arenaChunkBits)
	if c >= len(chunks) || chunks[c] == nil {
		return nil
	}
	return &chunks[c][id&(arenaChunkLen-1)]
}

// load is id's sets, nil when none was cached.
func (st *setTable) load(id nodeID) *nodeSets {
	if s := st.slot(id); s != nil {
		return s.Load()
	}
	return nil
}

// loadOrCreate is id's sets, made empty when there are none.
func (st *setTable) loadOrCreate(id nodeID) *nodeSets {
	if sets := st.load(id); sets != nil {
		return sets
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	slot := st.slot(id)
	if slot == nil {
		var chunks []*setChunk
		if p := st.chunks.Load(); p != nil {
			chunks = *p
		}
		c := int(id >> arenaChunkBits)
		grown := make([]*setChunk, max(len(chunks), c+1))
		copy(grown, chunks)
		grown[c] = new(setChunk)
		st.chunks.Store(&grown)
		slot = &grown[c][id&(arenaChunkLen-1)]
	}
	if sets := slot.Load(); sets != nil {
		return sets // a reader that raced made them
	}
	sets := new(nodeSets)
	slot.Store(sets)
	return sets
}

// clear drops id's sets: the id is given back, and may be given to another node.
func (st *setTable) clear(id nodeID) {
	if s := st.slot(id); s != nil {
		s.Store(nil)
	}
}

// cached is the set of kind k cached at id, nil when none.
func (t *tree) cached(id nodeID, k setKind) *answerSet {
	if sets := t.sets.load(id); sets != nil {
		return sets.sets[k].Load()
	}
	return nil
}

// cache keeps set as id's set of kind k; readers that race to do it store the same.
func (t *tree) cache(id nodeID, k setKind, set *answerSet) {
	ns := t.sets.loadOrCreate(id)
	ns.sets[k].Store(set)
	if k != exactSet && set.rare != nil && set.rare.steer != nil {
		ns.steer.Store(set.rare.steer)
	}
}

// forget drops id's cached set of kind k unless it is cut before key: then a write of key
// changes none of the records it holds, nor that there are more. The name's packed replies go
// whatever the set: they are few, and one the cut kept would be one more rule to get right.
func (t *tree) forget(id nodeID, k setKind, key string) {
	if sets := t.sets.load(id); sets != nil {
		p := &sets.sets[k]
		if s := p.Load(); s != nil && !s.cutBefore(key) {
			p.Store(nil)
			if k != exactSet {
				sets.forgetSteer()
			}
		}
		sets.packed.Store(nil)
	}
}

// drop drops id's cached set of kind k, and the name's packed replies.
func (t *tree) drop(id nodeID, k setKind) {
	if sets := t.sets.load(id); sets != nil {
		sets.sets[k].Store(nil)
		sets.packed.Store(nil)
		if k != exactSet {
			sets.forgetSteer()
		}
	}
}

// steered is the name's cached answer set and its steering (steerset.go); nil when none is
// cached or it has none.
func (ns *nodeSets) steered(exactNames bool) (*answerSet, *setSteer) {
	k := belowSet
	if exactNames {
		k = namesSet
	}
	if s := ns.sets[k].Load(); s != nil && s.rare != nil && s.rare.steer != nil {
		return s, s.rare.steer
	}
	return nil, nil
}

// forgetSteer drops the steering of the name's set, which a write dropped.
func (ns *nodeSets) forgetSteer() {
	ns.steer.Store(nil)
	ns.probe.Store(nil)
}
