package index

// Exact names. A SkyDNS prefix read gives a name the records of its whole subtree: asking
// for eu1.openmcp.cluster returns every name below it. Zone data cannot say that, so a zone
// transfer holds, and with Options.ExactNames the index answers, what a plain zone would:
// a name's records are those of its own key and of its record-id children, the leaves below
// it (".../app/3e6bee2e", the layout external-dns and gatewaydns write); a name with neither
// but with names below it is an empty non-terminal (NODATA), and a name not in the tree is
// NXDOMAIN, unless a stored "*" covers it (RFC 4592). Names and subtree reads agree on every
// name writers publish and on every leaf key.

// namesSet is what the name of n answers with exact names: never nil, empty for an empty
// non-terminal. At most limit records, the first in key order: a name may have more records
// than an answer can hold.
func (n *node) namesSet(limit int) *answerSet {
	if s := n.cached(namesSet); s != nil {
		return s
	}
	var r scanned
	r.entries = n.nameEntries(nil, limit+1)
	if len(r.entries) > limit {
		r.cut, r.boundary = true, r.entries[limit].key
		r.entries = r.entries[:limit]
	}
	s := newAnswerSet(r.entries).setCut(r)
	n.cache(namesSet, s)
	return s
}

// nameEntries appends the entries of n's name to dst, at most limit of them (0: all), in key
// order as an etcd read returns them: its own value, then its children's that have no
// children of their own.
func (n *node) nameEntries(dst []*entry, limit int) []*entry {
	start := len(dst)
	if n.value != nil {
		dst = append(dst, n.value)
	}
	for c := range n.children.all {
		if limit > 0 && len(dst)-start >= limit {
			break
		}
		if c.value != nil && c.children.len() == 0 {
			dst = append(dst, c.value)
		}
	}
	return dst
}
