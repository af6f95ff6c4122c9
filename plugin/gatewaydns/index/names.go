package index

// Exact names. A SkyDNS prefix read gives a name the records of its whole subtree: asking
// for eu1.openmcp.cluster returns every name below it. Zone data cannot say that, so a zone
// transfer holds, and with Options.ExactNames the index answers, what a plain zone would:
// a name's records are those of its own key and of its record-id children, the leaves below
// it (".../app/3e6bee2e", the layout external-dns and gatewaydns write); a name with neither
// but with names below it is an empty non-terminal (NODATA), and a name not in the tree is
// NXDOMAIN, unless a stored "*" covers it (RFC 4592). Names and subtree reads agree on every
// name writers publish and on every leaf key.

// namesSet is what the name of id, at the path elements elems, answers with exact names:
// never nil, empty for an empty non-terminal. At most limit records, the first in key order: a
// name may have more records than an answer can hold.
func (t *tree) namesSet(id nodeID, elems []string, limit int) *answerSet {
	if s := t.cached(id, namesSet); s != nil {
		return s
	}
	key := t.keyOf(elems)
	var r scanned
	for c, e := range t.nameRecords(id) {
		k := key
		if c != id {
			k = key + "/" + t.name(t.at(c))
		}
		if len(r.recs) == limit {
			r.cut, r.boundary = true, k
			break
		}
		r.recs = append(r.recs, rec{k, e})
	}
	s := newAnswerSet(r.recs).setCut(r)
	t.cache(id, namesSet, s)
	return s
}

// nameRecords yields the values of id's name with the nodes that hold them, in key order as an
// etcd read returns them: its own value, then those of its children that have no children of
// their own.
func (t *tree) nameRecords(id nodeID) func(yield func(nodeID, *entry) bool) {
	return func(yield func(nodeID, *entry) bool) {
		if v := t.at(id).value; v != nil && !yield(id, v) {
			return
		}
		for _, c := range t.children(id) {
			if cn := t.at(c); cn.value != nil && cn.leaf() && !yield(c, cn.value) {
				return
			}
		}
	}
}
