package index

// maxFew is how many children a node keeps in a slice before it moves them to a map.
const maxFew = 8

// children are a node's child nodes by path element. Most nodes have one to four (a name's
// record keys, a zone's few subdomains): those sit in a short slice, searched in order, since a
// Go map costs about 250 bytes even for one entry, which at 100k names is most of the index's
// memory. A node with more, such as a zone with every name of a cluster, has a map.
type children struct {
	few  []child
	many map[string]*node
}

type child struct {
	name string
	node *node
}

func (c *children) get(name string) *node {
	if c.many != nil {
		return c.many[name]
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
		c.many[name] = n
		return
	}
	for i := range c.few {
		if c.few[i].name == name {
			c.few[i].node = n
			return
		}
	}
	if len(c.few) < maxFew {
		c.few = append(c.few, child{name, n})
		return
	}
	c.many = make(map[string]*node, 2*maxFew)
	for _, ch := range c.few {
		c.many[ch.name] = ch.node
	}
	c.many[name] = n
	c.few = nil
}

func (c *children) remove(name string) {
	if c.many != nil {
		delete(c.many, name)
		return
	}
	for i := range c.few {
		if c.few[i].name == name {
			c.few = append(c.few[:i], c.few[i+1:]...)
			if len(c.few) == 0 {
				c.few = nil // an empty node holds no array
			}
			return
		}
	}
}

func (c *children) len() int {
	if c.many != nil {
		return len(c.many)
	}
	return len(c.few)
}

// all yields every child node, in no particular order.
func (c *children) all(yield func(*node) bool) {
	if c.many != nil {
		for _, n := range c.many {
			if !yield(n) {
				return
			}
		}
		return
	}
	for _, ch := range c.few {
		if !yield(ch.node) {
			return
		}
	}
}

// named yields every child node with its name, in no particular order.
func (c *children) named(yield func(string, *node) bool) {
	if c.many != nil {
		for name, n := range c.many {
			if !yield(name, n) {
				return
			}
		}
		return
	}
	for _, ch := range c.few {
		if !yield(ch.name, ch.node) {
			return
		}
	}
}
