package index

import (
	"slices"
	"strings"
)

// maxFew is how many children a node keeps in a slice before it moves them to a map.
const maxFew = 8

// children are a node's child nodes by path element, in byte order of their names, so that a
// read walks a subtree in etcd key order and can stop after the records an answer holds (see
// walk.go). Most nodes have one to four (a name's record keys, a zone's few subdomains): those
// sit in a short sorted slice, since a Go map costs about 250 bytes even for one entry, which
// at 100k names is most of the index's memory. A node with more, such as a zone with every
// name of a cluster, has a map to find a child and sorted chunks to walk them in order.
type children struct {
	few  []child
	many *manyChildren
}

type child struct {
	name string
	node *node
}

// manyChildren are the children of a node with more than maxFew.
type manyChildren struct {
	byName map[string]*node
	// chunks hold the children in byte order, each chunk at most maxChunk long: adding a
	// child moves at most one chunk's tail, where one sorted slice would move half of 100k.
	chunks [][]child
}

// maxChunk is the longest chunk of manyChildren.
const maxChunk = 256

func compareChild(c child, name string) int { return strings.Compare(c.name, name) }

func (c *children) get(name string) *node {
	if c.many != nil {
		return c.many.byName[name]
	}
	for i := range c.few {
		if c.few[i].name == name {
			return c.few[i].node
		}
	}
	return nil
}

// set adds or replaces the child called name.
func (c *children) set(name string, n *node) {
	if c.many != nil {
		c.many.set(name, n)
		return
	}
	i, found := slices.BinarySearchFunc(c.few, name, compareChild)
	switch {
	case found:
		c.few[i].node = n
	case len(c.few) < maxFew:
		c.few = slices.Insert(c.few, i, child{name, n})
	default:
		m := &manyChildren{byName: make(map[string]*node, 2*maxFew), chunks: [][]child{c.few}}
		for _, ch := range c.few {
			m.byName[ch.name] = ch.node
		}
		m.set(name, n)
		c.many, c.few = m, nil
	}
}

func (c *children) remove(name string) {
	if c.many != nil {
		c.many.remove(name)
		return
	}
	if i, found := slices.BinarySearchFunc(c.few, name, compareChild); found {
		c.few = slices.Delete(c.few, i, i+1)
		if len(c.few) == 0 {
			c.few = nil // an empty node holds no array
		}
	}
}

func (c *children) len() int {
	if c.many != nil {
		return len(c.many.byName)
	}
	return len(c.few)
}

// all yields every child node, in byte order of their names.
func (c *children) all(yield func(*node) bool) {
	for _, n := range c.named {
		if !yield(n) {
			return
		}
	}
}

// named yields every child node with its name, in byte order of the names.
func (c *children) named(yield func(string, *node) bool) {
	chunks := [][]child{c.few}
	if c.many != nil {
		chunks = c.many.chunks
	}
	for _, chunk := range chunks {
		for _, ch := range chunk {
			if !yield(ch.name, ch.node) {
				return
			}
		}
	}
}

// chunkOf is the chunk where name is or belongs: the first whose last name is not below it,
// else the last one.
func (m *manyChildren) chunkOf(name string) int {
	if len(m.chunks) == 1 {
		return 0 // which may be empty
	}
	i, _ := slices.BinarySearchFunc(m.chunks, name, func(chunk []child, name string) int {
		return compareChild(chunk[len(chunk)-1], name)
	})
	return min(i, len(m.chunks)-1)
}

func (m *manyChildren) set(name string, n *node) {
	_, exists := m.byName[name]
	m.byName[name] = n
	ci := m.chunkOf(name)
	chunk := m.chunks[ci]
	i, _ := slices.BinarySearchFunc(chunk, name, compareChild)
	if exists {
		chunk[i].node = n
		return
	}
	if len(chunk) < maxChunk {
		m.chunks[ci] = slices.Insert(chunk, i, child{name, n})
		return
	}
	if i == len(chunk) && ci == len(m.chunks)-1 {
		// After the last child, as a load in key order adds them: a new chunk, so that the
		// full one stays full rather than half empty for good.
		m.chunks = append(m.chunks, append(make([]child, 0, maxChunk), child{name, n}))
		return
	}
	// Split the full chunk in two halves, each in an array of its own with room to grow.
	half := len(chunk) / 2
	lo := append(make([]child, 0, maxChunk), chunk[:half]...)
	hi := append(make([]child, 0, maxChunk), chunk[half:]...)
	if i <= half {
		lo = slices.Insert(lo, i, child{name, n})
	} else {
		hi = slices.Insert(hi, i-half, child{name, n})
	}
	m.chunks[ci] = lo
	m.chunks = slices.Insert(m.chunks, ci+1, hi)
}

func (m *manyChildren) remove(name string) {
	if _, ok := m.byName[name]; !ok {
		return
	}
	delete(m.byName, name)
	ci := m.chunkOf(name)
	chunk := m.chunks[ci]
	i, _ := slices.BinarySearchFunc(chunk, name, compareChild)
	chunk = slices.Delete(chunk, i, i+1)
	if len(chunk) == 0 && len(m.chunks) > 1 {
		m.chunks = slices.Delete(m.chunks, ci, ci+1)
		return
	}
	m.chunks[ci] = chunk
}
