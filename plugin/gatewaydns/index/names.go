package index

import (
	"cmp"
	"slices"
)

// Exact names. A SkyDNS prefix read gives a name the records of its whole subtree: asking
// for eu1.openmcp.cluster returns every name below it. Zone data cannot say that, so a zone
// transfer holds, and with Options.ExactNames the index answers, what a plain zone would:
// a name's records are those of its own key and of its record-id children, the leaves below
// it (".../app/3e6bee2e", the layout external-dns and gatewaydns write); a name with neither
// but with names below it is an empty non-terminal (NODATA), and a name not in the tree is
// NXDOMAIN, unless a stored "*" covers it (RFC 4592). Names and subtree reads agree on every
// name writers publish and on every leaf key.

// namesSet is what the name of n answers with exact names: never nil, empty for an empty
// non-terminal.
func (n *node) namesSet() *answerSet {
	if s := n.names.Load(); s != nil {
		return s
	}
	s := newAnswerSet(n.nameEntries(nil))
	n.names.Store(s)
	return s
}

// nameEntries appends the entries of n's name to dst, sorted by key as an etcd read returns
// them: its own value and its children's that have no children of their own.
func (n *node) nameEntries(dst []*entry) []*entry { return n.nameEntriesEach(dst, nil) }

// nameEntriesEach is nameEntries that also calls each, when not nil, with every child: a zone
// copy goes over the children of a name once for both.
func (n *node) nameEntriesEach(dst []*entry, each func(el string, c *node)) []*entry {
	start := len(dst)
	if n.value != nil {
		dst = append(dst, n.value)
	}
	for el, c := range n.children.named {
		if c.value != nil && c.children.len() == 0 {
			dst = append(dst, c.value)
		}
		if each != nil {
			each(el, c)
		}
	}
	slices.SortFunc(dst[start:], func(a, b *entry) int { return cmp.Compare(a.svc.Key, b.svc.Key) })
	return dst
}
