package index

// The tree's writes. Each drops the cached answer sets it changes and no others: a subtree
// read's set above the key unless the set was cut before the key (walk.go), the exact-names
// sets of the key's own name and of the name above it where the key is one of its records
// (names.go), and where a node starts or stops being a leaf, the name above it.

// find is the node a read of elems answers from: the node itself, or, where the tree ends
// before it, a "*" child of the deepest node on the way (RFC 4592); depth is how many of elems
// lead to it, the "*" not counted. 0 when neither exists.
func (t *tree) find(elems []string) (id nodeID, depth int) {
	id, depth = t.walk(t.root, elems)
	if depth < len(elems) {
		return t.child(id, "*"), depth
	}
	return id, depth
}

// walk follows elems down from id as far as the tree goes: the deepest node reached and how
// many elements that took.
func (t *tree) walk(id nodeID, elems []string) (nodeID, int) {
	for i, e := range elems {
		c := t.child(id, e)
		if c == 0 {
			return id, i
		}
		id = c
	}
	return id, len(elems)
}

// node is the node at elems, 0 when there is none.
func (t *tree) node(elems []string) nodeID {
	if id, depth := t.walk(t.root, elems); depth == len(elems) {
		return id
	}
	return 0
}

// value is the value at elems, nil when there is none.
func (t *tree) value(elems []string) *entry {
	if id := t.node(elems); id != 0 {
		return t.at(id).value
	}
	return nil
}

// put stores e at elems below id and reports whether the key is new; key is e's key, which
// ends with elems.
func (t *tree) put(id nodeID, elems []string, e *entry, key string) bool {
	pos := len(key) + 1 // where the next element starts in key
	for _, el := range elems {
		pos -= len(el) + 1
	}
	var parent nodeID
	for _, el := range elems {
		t.forget(id, belowSet, key)
		c := t.child(id, el)
		if c == 0 {
			if n := t.at(id); n.leaf() && n.value != nil && parent != 0 {
				t.forget(parent, namesSet, key[:pos-1]) // id stops being a leaf, a record of its parent's name
			}
			c = t.newNode(el)
			t.addChild(id, c)
		}
		parent, id = id, c
		pos += len(el) + 1
	}
	t.drop(id, belowSet)
	t.drop(id, exactSet)
	t.drop(id, namesSet)
	n := t.at(id)
	if parent != 0 && n.leaf() {
		t.forget(parent, namesSet, key)
	}
	added := n.value == nil
	n.value = e
	return added
}

// remove deletes the value at elems, prunes the nodes left empty, and reports whether there
// was a value. key is the value's key.
func (t *tree) remove(elems []string, key string) bool {
	path := make([]nodeID, 0, len(elems)+1)
	id := t.root
	path = append(path, id)
	for _, el := range elems {
		if id = t.child(id, el); id == 0 {
			return false
		}
		path = append(path, id)
	}
	n := t.at(id)
	if n.value == nil {
		return false
	}
	n.value = nil
	t.drop(id, belowSet)
	t.drop(id, exactSet)
	t.drop(id, namesSet)
	above := path[:len(path)-1]
	for _, p := range above {
		t.forget(p, belowSet, key)
	}
	if len(above) > 0 && n.leaf() {
		t.forget(above[len(above)-1], namesSet, key)
	}
	// The key of path[i] is key cut after its first i elements.
	cut := len(key)
	for i := len(path) - 1; i > 0; i-- {
		c := path[i]
		if cn := t.at(c); cn.value != nil || !cn.leaf() {
			break
		}
		p := path[i-1]
		t.removeChild(p, c)
		t.release(c)
		cut -= len(elems[i-1]) + 1
		if pn := t.at(p); pn.leaf() && pn.value != nil && i >= 2 {
			t.forget(path[i-2], namesSet, key[:cut]) // p becomes a leaf, a record of its parent's name
		}
	}
	return true
}

// insert is put for a subtree that a load builds: no reader has cached a set in it.
func (t *tree) insert(id nodeID, elems []string, e *entry) bool {
	for _, el := range elems {
		c := t.childToInsert(id, el)
		if c == 0 {
			c = t.newNode(el)
			t.addChild(id, c)
		}
		id = c
	}
	n := t.at(id)
	added := n.value == nil
	n.value = e
	return added
}

// childToInsert is child for insert: a load adds a node's children in byte order, mostly, and
// one that sorts after the last is new without a look in the table.
func (t *tree) childToInsert(id nodeID, name string) nodeID {
	if mid := t.at(id).many(); mid != 0 {
		m := t.many.at(mid)
		last := m.chunks[len(m.chunks)-1]
		if len(last) > 0 && t.name(t.at(last[len(last)-1])) < name {
			return 0
		}
		return m.get(t, name)
	}
	return t.child(id, name)
}

// graft puts sub, a subtree in no tree, in place of the node at path (creating the nodes on
// the way), keeps a value that sat at that node itself, and returns how many values the
// replaced subtree held, and its node (0 when none): out of the tree, for the caller to
// release. An empty sub removes the node, and the nodes left empty above it. region is the
// prefix of the keys below path, which the graft replaces.
func (t *tree) graft(path []string, sub nodeID, region string) (removed int, old nodeID) {
	if len(path) == 0 {
		old, t.root = t.root, sub // the root holds no value, and no set worth keeping
		return t.countValues(old), old
	}
	nodes := []nodeID{t.root}
	id := t.root
	for _, el := range path[:len(path)-1] {
		c := t.child(id, el)
		if c == 0 {
			c = t.newNode(el)
			t.addChild(id, c)
		}
		nodes = append(nodes, c)
		id = c
	}
	for _, p := range nodes {
		t.forget(p, belowSet, region)
		t.drop(p, namesSet)
	}
	sn := t.at(sub)
	if old = t.child(id, path[len(path)-1]); old != 0 {
		removed = t.countValues(old)
		if v := t.at(old).value; v != nil {
			removed--
			sn.value = v
		}
		t.removeChild(id, old)
	}
	if sn.value != nil || !sn.leaf() {
		t.addChild(id, sub)
		return removed, old
	}
	t.release(sub)
	for i := len(nodes) - 1; i > 0; i-- {
		p := nodes[i]
		if pn := t.at(p); pn.value != nil || !pn.leaf() {
			break
		}
		t.removeChild(nodes[i-1], p)
		t.release(p)
	}
	return removed, old
}

// countValues is how many values the subtree at id holds.
func (t *tree) countValues(id nodeID) int {
	count := 0
	stack := []nodeID{id}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if t.at(id).value != nil {
			count++
		}
		for _, c := range t.children(id) {
			stack = append(stack, c)
		}
	}
	return count
}
