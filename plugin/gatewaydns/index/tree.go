package index

// The tree's writes. Each drops the cached answer sets it changes and no others: a subtree
// read's set above the key unless the set was cut before the key (walk.go), the exact-names
// sets of the key's own name and of the name above it where the key is one of its records
// (names.go), and where a node starts or stops being a leaf, the name above it.

func (n *node) child(name string) *node {
	if n == nil {
		return nil
	}
	return n.children.get(name)
}

// find is the node a read of elems answers from: the node itself, or, where the tree ends
// before it, a "*" child of the deepest node on the way (RFC 4592). Nil when neither exists.
func (n *node) find(elems []string) *node {
	n, depth := n.walk(elems)
	if depth < len(elems) {
		return n.child("*")
	}
	return n
}

// walk follows elems down as far as the tree goes: the deepest node reached and how many
// elements that took.
func (n *node) walk(elems []string) (*node, int) {
	for i, e := range elems {
		c := n.children.get(e)
		if c == nil {
			return n, i
		}
		n = c
	}
	return n, len(elems)
}

// put stores e at elems and reports whether the key is new.
func (n *node) put(elems []string, e *entry) bool {
	key := e.key
	var parent *node
	for _, el := range elems {
		n.forget(belowSet, key)
		c := n.children.get(el)
		if c == nil {
			if n.children.len() == 0 && n.value != nil && parent != nil {
				parent.forget(namesSet, n.value.key) // n stops being a leaf, a record of its parent's name
			}
			c = &node{}
			n.children.set(el, c)
		}
		parent, n = n, c
	}
	n.drop(belowSet)
	n.drop(exactSet)
	n.drop(namesSet)
	if parent != nil && n.children.len() == 0 {
		parent.forget(namesSet, key)
	}
	added := n.value == nil
	n.value = e
	return added
}

// remove deletes the value at elems, prunes the nodes left empty, and reports whether there
// was a value.
func (n *node) remove(elems []string) bool {
	path := make([]*node, 0, len(elems)+1)
	path = append(path, n)
	for _, el := range elems {
		if n = n.children.get(el); n == nil {
			return false
		}
		path = append(path, n)
	}
	if n.value == nil {
		return false
	}
	key := n.value.key
	n.value = nil
	n.drop(belowSet)
	n.drop(exactSet)
	n.drop(namesSet)
	above := path[:len(path)-1]
	for _, p := range above {
		p.forget(belowSet, key)
	}
	if len(above) > 0 && n.children.len() == 0 {
		above[len(above)-1].forget(namesSet, key)
	}
	for i := len(path) - 1; i > 0; i-- {
		if p := path[i]; p.value != nil || p.children.len() > 0 {
			break
		}
		p := path[i-1]
		p.children.remove(elems[i-1])
		if p.children.len() == 0 && p.value != nil && i >= 2 {
			path[i-2].forget(namesSet, p.value.key) // p becomes a leaf, a record of its parent's name
		}
	}
	return true
}

// graft puts sub in place of the node at path (creating the nodes on the way), keeps a value
// that sat at that node itself, and returns how many values the replaced subtree held. An
// empty sub removes the node, and the nodes left empty above it. region is the prefix of the
// keys below path, which the graft replaces.
func (n *node) graft(path []string, sub *node, region string) (removed int) {
	if len(path) == 0 {
		removed = n.countValues()
		n.children = sub.children
		n.drop(belowSet)
		n.drop(namesSet)
		return removed
	}
	nodes := []*node{n}
	for _, el := range path[:len(path)-1] {
		c := n.children.get(el)
		if c == nil {
			c = &node{}
			n.children.set(el, c)
		}
		nodes = append(nodes, c)
		n = c
	}
	for _, p := range nodes {
		p.forget(belowSet, region)
		p.drop(namesSet)
	}
	last := path[len(path)-1]
	if old := n.children.get(last); old != nil {
		removed = old.countValues()
		if old.value != nil {
			removed--
			sub.value = old.value
		}
	}
	if sub.value != nil || sub.children.len() > 0 {
		n.children.set(last, sub)
		return removed
	}
	n.children.remove(last)
	for i := len(nodes) - 1; i > 0; i-- {
		if p := nodes[i]; p.value != nil || p.children.len() > 0 {
			break
		}
		nodes[i-1].children.remove(path[i-1])
	}
	return removed
}

func (n *node) countValues() int {
	if n == nil {
		return 0
	}
	c := 0
	if n.value != nil {
		c = 1
	}
	for ch := range n.children.all {
		c += ch.countValues()
	}
	return c
}
