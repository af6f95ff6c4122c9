package index

import (
	"strings"
	"unsafe"
)

// label is a node's path element. Nearly every element is short: a DNS label of a name
// ("h12345", "api") or a record id (8 hex digits). Those are held in the node itself, with no
// object of their own; a longer one is a string in the tree's arena of long labels.
type label struct {
	// b holds the element in b[:b[inlineLen]] when b[inlineLen] <= inlineLen, else
	// b[inlineLen] is longLabel and b[:4] is the id of the string in tree.long.
	b [inlineLen + 1]byte
}

const (
	inlineLen = 15
	longLabel = 0xff
)

func (l *label) long() uint32 {
	if l.b[inlineLen] != longLabel {
		return 0
	}
	return uint32(l.b[0]) | uint32(l.b[1])<<8 | uint32(l.b[2])<<16 | uint32(l.b[3])<<24
}

// setLabel sets n's label to name, copying it.
func (t *tree) setLabel(n *node, name string) {
	if len(name) <= inlineLen {
		copy(n.label.b[:], name)
		n.label.b[inlineLen] = byte(len(name))
		return
	}
	id := t.long.alloc()
	*t.long.at(id) = strings.Clone(name)
	n.label.b = [inlineLen + 1]byte{byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24), inlineLen: longLabel}
}

// releaseLabel gives back the string of a long label.
func (t *tree) releaseLabel(n *node) {
	if id := n.label.long(); id != 0 {
		t.long.release(id)
	}
}

// name is n's label. A short one refers into the node: it is good only while the node is, under
// the index's lock, and is to be copied (strings.Clone) to be kept.
func (t *tree) name(n *node) string {
	if l := n.label.b[inlineLen]; l <= inlineLen {
		return unsafe.String(&n.label.b[0], int(l))
	}
	return *t.long.at(n.label.long())
}

// named reports whether n's label is name, without a string for it.
func (t *tree) named(n *node, name string) bool {
	if l := n.label.b[inlineLen]; l <= inlineLen {
		return int(l) == len(name) && string(n.label.b[:l]) == name
	}
	return *t.long.at(n.label.long()) == name
}
