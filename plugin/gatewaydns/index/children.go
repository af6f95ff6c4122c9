package index

import (
	"hash/maphash"
	"slices"
	"strings"
)

// maxFew is how many children a node keeps as a list of siblings before it indexes them.
const maxFew = 8

// A node's children are kept in byte order of their labels, so that a read walks a subtree in
// etcd key order and can stop after the records an answer holds (see walk.go). Most nodes have
// one to four (a name's record keys, a zone's few subdomains): those are a list through the
// children's next ids, which costs nothing more than the children themselves. A node with
// more, such as a zone with every name of a cluster, has a manyChildren: a hash table to find
// a child, and the ids in order, in chunks.

// manyChildren are the children of a node with more than maxFew. Neither part holds a
// pointer but to its arrays: a million children are a few thousand objects.
type manyChildren struct {
	// slots is an open-addressing table, probed linearly: a child's id in the low 32 bits
	// and 32 bits of its label's hash in the high 32, which also give the slot it belongs
	// in (tag & mask); 0 is a free slot.
	slots []uint64
	n     int // children
	// chunks hold the children's ids in byte order of their labels, each chunk at most
	// maxChunk long: adding a child moves at most one chunk's tail, where one sorted array
	// would move half of a million.
	chunks [][]nodeID
}

// maxChunk is the longest chunk of manyChildren.
const maxChunk = 256

var labelSeed = maphash.MakeSeed()

// labelTag is the hash of a label that the table of manyChildren keeps.
func labelTag(name string) uint64 { return maphash.String(labelSeed, name) >> 32 }

// child is id's child called name, 0 when none.
func (t *tree) child(id nodeID, name string) nodeID {
	n := t.at(id)
	if m := n.many(); m != 0 {
		return t.many.at(m).get(t, name)
	}
	for c := n.first(); c != 0; {
		cn := t.at(c)
		if t.named(cn, name) {
			return c
		}
		c = cn.next
	}
	return 0
}

// children yields id's children with their labels, in byte order of the labels. The labels
// are good only while the nodes are (tree.name). The children may not change meanwhile.
func (t *tree) children(id nodeID) func(yield func(string, nodeID) bool) {
	return func(yield func(string, nodeID) bool) {
		n := t.at(id)
		if n.many() == 0 {
			for c := n.first(); c != 0; {
				cn := t.at(c)
				if !yield(t.name(cn), c) {
					return
				}
				c = cn.next
			}
			return
		}
		for _, chunk := range t.many.at(n.many()).chunks {
			for _, c := range chunk {
				if !yield(t.name(t.at(c)), c) {
					return
				}
			}
		}
	}
}

// addChild makes c, a node that is in no tree, a child of id; id has no child with c's label.
func (t *tree) addChild(id, c nodeID) {
	n := t.at(id)
	if m := n.many(); m != 0 {
		t.many.at(m).add(t, c)
		return
	}
	name := t.name(t.at(c))
	prev, few := nodeID(0), 0
	for k := n.first(); k != 0; k = t.at(k).next {
		if t.name(t.at(k)) < name {
			prev = k
		}
		few++
	}
	if few == maxFew {
		// Many now: a table and chunks instead of the list.
		mid := t.many.alloc()
		m := t.many.at(mid)
		m.slots = make([]uint64, 4*maxFew)
		m.chunks = [][]nodeID{make([]nodeID, 0, 2*maxFew)}
		for k := n.first(); k != 0; {
			next := t.at(k).next
			t.at(k).next = 0
			m.add(t, k)
			k = next
		}
		m.add(t, c)
		n.down = manyBit | mid
		return
	}
	if prev == 0 {
		t.at(c).next, n.down = n.first(), uint32(c)
		return
	}
	t.at(c).next, t.at(prev).next = t.at(prev).next, c
}

// removeChild takes c, a child of id, out of id's children (but not out of the arena).
func (t *tree) removeChild(id, c nodeID) {
	n := t.at(id)
	mid := n.many()
	if mid == 0 {
		prev := nodeID(0)
		for k := n.first(); k != c; k = t.at(k).next {
			prev = k
		}
		if prev == 0 {
			n.down = uint32(t.at(c).next)
		} else {
			t.at(prev).next = t.at(c).next
		}
		t.at(c).next = 0
		return
	}
	m := t.many.at(mid)
	m.remove(t, c)
	if m.n > maxFew {
		return
	}
	// Few again: back to a list, built from the last child to the first.
	first := nodeID(0)
	for i := len(m.chunks) - 1; i >= 0; i-- {
		for j := len(m.chunks[i]) - 1; j >= 0; j-- {
			k := m.chunks[i][j]
			t.at(k).next, first = first, k
		}
	}
	n.down = uint32(first)
	t.many.release(mid)
}

func (m *manyChildren) get(t *tree, name string) nodeID {
	tag := labelTag(name)
	mask := uint64(len(m.slots) - 1)
	for i := tag & mask; m.slots[i] != 0; i = (i + 1) & mask {
		if s := m.slots[i]; s>>32 == tag && t.named(t.at(nodeID(s)), name) {
			return nodeID(s)
		}
	}
	return 0
}

func (m *manyChildren) add(t *tree, c nodeID) {
	name := t.name(t.at(c))
	m.n++
	if 4*m.n > 3*len(m.slots) {
		m.grow()
	}
	m.insert(labelTag(name)<<32 | uint64(c))
	m.place(t, name, c)
}

// insert puts slot s (tag and id) in the table.
func (m *manyChildren) insert(s uint64) {
	mask := uint64(len(m.slots) - 1)
	i := s >> 32 & mask
	for m.slots[i] != 0 {
		i = (i + 1) & mask
	}
	m.slots[i] = s
}

// grow doubles the table.
func (m *manyChildren) grow() {
	old := m.slots
	m.slots = make([]uint64, 2*len(old))
	for _, s := range old {
		if s != 0 {
			m.insert(s)
		}
	}
}

// place puts c, labelled name, in order in the chunks.
func (m *manyChildren) place(t *tree, name string, c nodeID) {
	compare := func(k nodeID, name string) int { return strings.Compare(t.name(t.at(k)), name) }
	last := m.chunks[len(m.chunks)-1]
	if len(last) == 0 || compare(last[len(last)-1], name) < 0 {
		// After the last child, as a load in key order adds most of them.
		if len(last) < maxChunk {
			m.chunks[len(m.chunks)-1] = append(last, c)
			return
		}
		// A new chunk, so that the full one stays full rather than half empty for good.
		m.chunks = append(m.chunks, append(make([]nodeID, 0, maxChunk), c))
		return
	}
	ci, _ := slices.BinarySearchFunc(m.chunks, name, func(chunk []nodeID, name string) int {
		return compare(chunk[len(chunk)-1], name)
	})
	chunk := m.chunks[ci]
	i, _ := slices.BinarySearchFunc(chunk, name, compare)
	if len(chunk) < maxChunk {
		m.chunks[ci] = slices.Insert(chunk, i, c)
		return
	}
	// Split the full chunk in two halves, each in an array of its own with room to grow.
	half := len(chunk) / 2
	lo := append(make([]nodeID, 0, maxChunk), chunk[:half]...)
	hi := append(make([]nodeID, 0, maxChunk), chunk[half:]...)
	if i <= half {
		lo = slices.Insert(lo, i, c)
	} else {
		hi = slices.Insert(hi, i-half, c)
	}
	m.chunks[ci] = lo
	m.chunks = slices.Insert(m.chunks, ci+1, hi)
}

func (m *manyChildren) remove(t *tree, c nodeID) {
	name := t.name(t.at(c))
	m.n--
	// The table: empty c's slot, and move back the entries after it that it was in the way of
	// (deletion by backward shift, as linear probing needs no tombstones).
	mask := uint64(len(m.slots) - 1)
	i := labelTag(name) & mask
	for nodeID(m.slots[i]) != c {
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; m.slots[j] != 0; j = (j + 1) & mask {
		home := m.slots[j] >> 32 & mask
		// The entry at j may move to i unless its home lies cyclically in (i, j].
		if (j-home)&mask >= (j-i)&mask {
			m.slots[i] = m.slots[j]
			i = j
		}
	}
	m.slots[i] = 0
	// The chunks.
	ci, _ := slices.BinarySearchFunc(m.chunks, name, func(chunk []nodeID, name string) int {
		return strings.Compare(t.name(t.at(chunk[len(chunk)-1])), name)
	})
	chunk := m.chunks[ci]
	k := slices.Index(chunk, c)
	chunk = slices.Delete(chunk, k, k+1)
	if len(chunk) == 0 && len(m.chunks) > 1 {
		m.chunks = slices.Delete(m.chunks, ci, ci+1)
		return
	}
	m.chunks[ci] = chunk
}
