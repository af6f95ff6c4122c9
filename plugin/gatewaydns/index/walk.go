package index

import "strings"

// Bounded reads. A question whose read spans a subtree (an ancestor of many names, the apex, a
// "*" or "any" label) is answered from the first records of that subtree in etcd key order,
// at most Options.MaxRecords of them, so that its cost does not grow with the subtree: the
// tree is walked in key order and the walk stops there. A read that stops early is cut; a
// cached set remembers the key of the first record it left out (its boundary), so that a
// write after that key leaves the set as it is, and a write before it costs one bounded read
// on the next question. Where the first records have distinct addresses the answer is the
// stock plugin's, which reads them all but cannot send more than a message holds either (the
// server truncates it and sets TC); README.md says where it differs.
//
// Key order is byte order of the whole key, which is not quite a walk of the children in byte
// order of their names: the keys below a child "a" ("a/...") sort after a sibling "a-b" and
// its keys, since '-' sorts before '/', while the key "a" itself sorts before "a-b". So the walk
// takes each child's own value where its name falls, and keeps the child's subtree pending
// until the next sibling's name sorts after "a/".

// DefaultMaxRecords is the most records a read gives one question: more A records than a 64 KiB
// message holds (16 bytes each, compressed), so that where the first of them have distinct
// addresses, an answer cut here is the one the stock plugin sends, truncated to the message.
const DefaultMaxRecords = 4096

// scanBudgetPerRecord is how many nodes a read with a query wildcard may visit per record it
// may return: a "*" followed by a label that few subtrees have visits many nodes for few
// records.
const scanBudgetPerRecord = 8

// scan is one read of the records below a node, in key order.
type scan struct {
	t *tree
	// pattern is the path elements below the start node that a key must have, "*" and "any"
	// matching any; a key may have more.
	pattern []string
	limit   int // records to return; the walk reads one more, to tell whether there are more
	budget  int // nodes it may visit; 0: no limit (a read without a pattern needs none)
	visited int
	key     []byte // the key of the node being walked, and "/"
	keys    strs   // the keys of the records found
	found   []rec
}

// scanned is what a scan found.
type scanned struct {
	recs []rec
	// cut: there may be more records than recs. boundary is then the key of the first
	// record left out, or "" when the walk ran out of budget and does not know it.
	cut      bool
	boundary string
}

// scanBelow reads the records strictly below id, at the path elements elems, that match
// pattern, as an etcd prefix read of id's key would find them, at most limit of them.
func (t *tree) scanBelow(id nodeID, elems, pattern []string, limit int) scanned {
	s := scan{t: t, pattern: pattern, limit: limit, key: t.appendDir(make([]byte, 0, 128), elems)}
	if len(pattern) > 0 {
		s.budget = scanBudgetPerRecord*limit + 2*len(pattern)
	}
	done := s.below(id, 0)
	switch {
	case len(s.found) > limit:
		return scanned{recs: s.found[:limit], cut: true, boundary: s.found[limit].key}
	case !done:
		return scanned{recs: s.found, cut: true}
	}
	return scanned{recs: s.found}
}

// pendingChild is a child whose subtree a walk comes back to.
type pendingChild struct {
	name string
	id   nodeID
}

// below walks the children of id, at depth below the start node, and what lies below them;
// false when the walk is to stop. s.key is id's key and "/" meanwhile.
func (s *scan) below(id nodeID, depth int) bool {
	t := s.t
	if depth < len(s.pattern) && !isQueryWildcard(s.pattern[depth]) {
		if !s.spend() {
			return false
		}
		name := s.pattern[depth]
		c := t.child(id, name)
		return c == 0 || s.take(c, name, depth+1) && s.into(c, name, depth+1)
	}
	var buf [8]pendingChild
	pending := buf[:0] // children whose subtrees come later in key order; the last comes first
	for name, c := range t.children(id) {
		for len(pending) > 0 && subtreeBefore(pending[len(pending)-1].name, name) {
			p := pending[len(pending)-1]
			pending = pending[:len(pending)-1]
			if !s.into(p.id, p.name, depth+1) {
				return false
			}
		}
		if !s.spend() || !s.take(c, name, depth+1) {
			return false
		}
		if !t.at(c).leaf() {
			pending = append(pending, pendingChild{name, c})
		}
	}
	for i := len(pending) - 1; i >= 0; i-- {
		if !s.into(pending[i].id, pending[i].name, depth+1) {
			return false
		}
	}
	return true
}

// into walks below the child c, called name, at depth.
func (s *scan) into(c nodeID, name string, depth int) bool {
	n := len(s.key)
	s.key = append(append(s.key, name...), '/')
	more := s.below(c, depth)
	s.key = s.key[:n]
	return more
}

// take adds the value of c, called name, at depth, where the pattern lets its key match;
// false once the walk has one record more than its limit.
func (s *scan) take(c nodeID, name string, depth int) bool {
	e := s.t.at(c).value
	if e == nil || depth < len(s.pattern) {
		return true
	}
	m := s.keys.room(len(s.key) + len(name))
	s.keys.b = append(append(s.keys.b, s.key...), name...)
	s.found = append(s.found, rec{s.keys.since(m), e})
	return len(s.found) <= s.limit
}

// spend counts a visited node; false when the budget is spent.
func (s *scan) spend() bool {
	s.visited++
	return s.budget == 0 || s.visited <= s.budget
}

// subtreeBefore reports whether the keys below the child named top ("top/...") sort before the
// sibling named name, which sorts after top: unless name is top followed by a byte that sorts
// before '/'.
func subtreeBefore(top, name string) bool {
	return !strings.HasPrefix(name, top) || name[len(top)] > '/'
}

// isQueryWildcard reports whether a question's label matches any path element.
func isQueryWildcard(label string) bool { return label == "*" || label == "any" }
