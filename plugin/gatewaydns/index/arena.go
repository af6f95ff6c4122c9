package index

import (
	"sync"
	"sync/atomic"
)

// A million records as a million small objects each (a node, a child slice, a map slot, a key
// string, an entry) is a heap the garbage collector marks object by object, over and again
// while a load grows it, and that GOGC doubles in RSS. So the tree keeps its nodes in arenas:
// arrays of a few thousand, addressed by a 32-bit id, that the collector sees as a few hundred
// objects; what a node refers to is an id, not a pointer, but for its value.

// arenaChunkBits sets the size of an arena's arrays: 4096 nodes of 32 bytes, 128 KiB.
const (
	arenaChunkBits = 12
	arenaChunkLen  = 1 << arenaChunkBits
)

// arena is a growing array of T addressed by id, 0 being no element, with a free list. Ids are
// given and taken back under its own lock, so that a load builds its subtree off the index's
// lock in the same arena; an element is read and written under the index's lock (or, for one
// not yet in the tree, by the load that has it). Readers find the arrays through an atomic
// pointer, so that growing them races with no read.
type arena[T any] struct {
	mu     sync.Mutex
	chunks atomic.Pointer[[]*[arenaChunkLen]T]
	next   uint32   // the lowest id never given
	free   []uint32 // ids given back
	live   int
}

// at is the element id (not 0).
func (a *arena[T]) at(id uint32) *T {
	chunks := *a.chunks.Load()
	return &chunks[id>>arenaChunkBits][id&(arenaChunkLen-1)]
}

// alloc is a new id, its element zero.
func (a *arena[T]) alloc() uint32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.live++
	if n := len(a.free); n > 0 {
		id := a.free[n-1]
		a.free = a.free[:n-1]
		return id
	}
	if a.next == 0 {
		a.next = 1 // 0 is none
	}
	id := a.next
	a.next++
	var chunks []*[arenaChunkLen]T
	if p := a.chunks.Load(); p != nil {
		chunks = *p
	}
	if int(id>>arenaChunkBits) == len(chunks) {
		// A new slice header, published at once: a reader holds the old one, whose arrays
		// are the same.
		grown := append(chunks, new([arenaChunkLen]T))
		a.chunks.Store(&grown)
	}
	return id
}

// release takes id back, its element zeroed: no one may refer to it any more.
func (a *arena[T]) release(id uint32) {
	var zero T
	*a.at(id) = zero
	a.mu.Lock()
	a.free = append(a.free, id)
	a.live--
	a.mu.Unlock()
}

// len is how many ids are given and not taken back.
func (a *arena[T]) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.live
}
