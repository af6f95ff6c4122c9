package index

import "strings"

// nodeID is a node's index in the tree's arena; 0 is none.
type nodeID uint32

// node is one path element of the key tree, in 32 bytes with no pointer but its value's.
// Children, value and label change only under the index's write lock, or in a subtree that a
// load builds before it is in the tree. The answer sets that readers cache for a node are kept
// beside the tree (tree.sets), as most nodes never have one.
type node struct {
	label label
	value *entry
	// down leads to the children: the first in byte order of the labels, while they are few,
	// or manyBit and the id in tree.many of the children's table (children.go). 0: none.
	down uint32
	next nodeID // the next sibling in byte order, while the parent's children are few
}

// manyBit marks node.down as the id of a table of children. Ids stay below it: 2^31 nodes
// would take 64 GiB.
const manyBit = 1 << 31

// leaf reports whether n has no children.
func (n *node) leaf() bool { return n.down == 0 }

// first is n's first child while its children are few; 0 when they are many, or none.
func (n *node) first() nodeID {
	if n.down&manyBit != 0 {
		return 0
	}
	return nodeID(n.down)
}

// many is the id in tree.many of n's children when they are many; 0 when not.
func (n *node) many() uint32 {
	if n.down&manyBit == 0 {
		return 0
	}
	return n.down &^ manyBit
}

// tree is the key tree of an index: its nodes, and what they refer to.
type tree struct {
	key   string // the key prefix of the root, e.g. "/skydns/"
	root  nodeID
	nodes arena[node]
	long  arena[string]       // labels too long for a node (label.go)
	many  arena[manyChildren] // children of nodes with many (children.go)
	sets  setTable            // the answer sets cached at nodes (sets.go)
}

func newTree(key string) *tree {
	t := &tree{key: key}
	t.root = t.newNode("")
	return t
}

// keyOf is the key of the node at the path elements elems.
func (t *tree) keyOf(elems []string) string {
	return strings.TrimSuffix(t.key, "/") + "/" + strings.Join(elems, "/")
}

// appendDir appends to b the prefix of the keys below the node at the path elements elems:
// its key and "/".
func (t *tree) appendDir(b []byte, elems []string) []byte {
	b = append(b, t.key...)
	for _, el := range elems {
		b = append(append(b, el...), '/')
	}
	return b
}

// at is the node id.
func (t *tree) at(id nodeID) *node { return t.nodes.at(uint32(id)) }

// newNode is a new node without children or value.
func (t *tree) newNode(name string) nodeID {
	id := nodeID(t.nodes.alloc())
	t.setLabel(t.at(id), name)
	return id
}

// release gives back the node id and what it refers to but its children.
func (t *tree) release(id nodeID) {
	n := t.at(id)
	t.releaseLabel(n)
	if m := n.many(); m != 0 {
		t.many.release(m)
	}
	t.sets.clear(id)
	t.nodes.release(uint32(id))
}

// releaseAll gives back the node id and every node below it; none may be in the tree.
func (t *tree) releaseAll(id nodeID) {
	stack := []nodeID{id}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range t.children(id) {
			stack = append(stack, c)
		}
		t.release(id)
	}
}
