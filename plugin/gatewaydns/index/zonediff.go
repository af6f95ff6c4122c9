package index

import (
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/request"
)

// MaxDiffKeys is the most changed keys a ZoneDiff is made of. It is built in one read lock, which
// a writer waits for, and the queries that come after the writer with it: some 10 us a key, so
// 2048 keys hold them up for 20 ms at most. A secondary further behind gets the whole zone, whose
// copy gives way to queries (Index.Zone).
const MaxDiffKeys = 2048

// ZoneDiff is what an incremental transfer of zone origin from serial is made of (RFC 1995):
// the names whose records may have changed since, as they were at serial (past) and as they
// are now (now), each a Zone of those names alone, at the zone's current serial. A transfer
// builds each name's records from both and sends the difference. ok is false when the journal
// does not hold every change of the zone since serial (journal.go; see JournalGap), more than
// MaxDiffKeys keys changed since, or serial is not before the zone's: the whole zone then.
//
// apexNames are names whose records the apex's records hold too (the glue of in-zone
// nameservers a stanza names): a change of one of them changes the apex's.
func (ix *Index) ZoneDiff(origin string, serial uint32, apexNames []string) (past, now *Zone, ok bool) {
	return ix.zoneDiff(origin, serial, apexNames, func(prefix, dir string, rev int64, revThen uint32) (map[string]*entry, bool) {
		first, ok := ix.journal.since(prefix, rev, revThen)
		if !ok {
			return nil, false
		}
		return ix.journal.pastValues(first, dir), true
	})
}

// zoneDiff is ZoneDiff with the changed keys' values then given by changed (called under the
// read lock with the zone's key prefix, its directory, its revision and the revision's low 32
// bits that serial stands for: steerserial.go), ok false for none.
func (ix *Index) zoneDiff(origin string, serial uint32, apexNames []string, changed func(prefix, dir string, rev int64, revThen uint32) (map[string]*entry, bool)) (past, now *Zone, ok bool) {
	if !ix.Loaded() {
		return nil, nil, false
	}
	minTTL := ix.MinTTL(request.Request{})
	var buf [16]string
	labels, _ := ix.labels(buf[:0], origin)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	dir := msg.Path(origin, ix.opts.Prefix) + "/"
	prefix := ix.zonePrefixOf(dir)
	rev, cur := ix.serials[prefix], ix.serialOfLocked(prefix)
	then, ok := ix.epochAt(prefix, serial)
	if !ok || !SerialAfter(cur, serial) {
		return nil, nil, false
	}
	values := map[string]*entry{}                             // none changed, where only the health of addresses has
	if revThen := serial - then.off; revThen != uint32(rev) { // #nosec G115 -- RFC 1982
		if values, ok = changed(prefix, dir, rev, revThen); !ok {
			return nil, nil, false
		}
	}
	if len(values) > MaxDiffKeys {
		return nil, nil, false
	}
	h := ix.history(values)
	paths := h.changedNames(ix, labels, origin, apexNames)
	paths = ix.healthChangedNames(paths, dir, then.view)
	ttls := ix.leaseTTLs(maps.Clone(ix.leases))
	now = namesOf(ix.tree, origin, labels, paths, ix.view())
	past = namesOf(h.pastTree(ix.root, paths), origin, labels, paths, then.view)
	for _, z := range []*Zone{past, now} {
		z.Revision, z.serial, z.ttls, z.minTTL = rev, cur, ttls, minTTL
	}
	return past, now, true
}

// healthChangedNames adds to paths those of the names of the zone under dir whose checked
// addresses were held down otherwise in the view then than now: their records have not
// changed, but what a transfer holds of them may have.
func (ix *Index) healthChangedNames(paths [][]string, dir string, then *healthView) [][]string {
	now := ix.view()
	if then == now {
		return paths
	}
	var moved []CheckTarget
	for t := range ix.checks.targets {
		if then.isDown(t.Check, t.Host) != now.isDown(t.Check, t.Host) {
			moved = append(moved, t)
		}
	}
	seen := map[string]bool{}
	for _, p := range paths {
		seen[strings.Join(p, "/")] = true
	}
	for _, n := range ix.checks.namesOf(moved) {
		if !strings.HasPrefix(n+"/", dir) {
			continue
		}
		p := ix.elements(n)
		if k := strings.Join(p, "/"); !seen[k] {
			seen[k] = true
			paths = append(paths, p)
		}
	}
	slices.SortFunc(paths, slices.Compare)
	return paths
}

// history is the index's tree now, with the values that the changed keys had before
// (journal.pastValues): enough to tell what any node was then.
type history struct {
	t    *tree
	past map[string]*entry
	keys []string // past's keys, sorted
}

func (ix *Index) history(past map[string]*entry) *history {
	return &history{t: ix.tree, past: past, keys: slices.Sorted(maps.Keys(past))}
}

// value is the value the key of the node id (0: no node now) had then.
func (h *history) value(key string, id nodeID) *entry {
	if v, changed := h.past[key]; changed {
		return v
	}
	if id == 0 {
		return nil
	}
	return h.t.at(id).value
}

// changedBelow are the changed keys below key, in order, each without key and its "/".
func (h *history) changedBelow(key string) func(yield func(rest, changed string) bool) {
	return func(yield func(rest, changed string) bool) {
		dir := key + "/"
		for i := sort.SearchStrings(h.keys, dir); i < len(h.keys) && strings.HasPrefix(h.keys[i], dir); i++ {
			if !yield(h.keys[i][len(dir):], h.keys[i]) {
				return
			}
		}
	}
}

// hadBelow tells whether a key below key (the key of the node id; 0: none now) was there then:
// a changed one that had a value, or one there now that has not changed since.
func (h *history) hadBelow(key string, id nodeID) bool {
	for _, changed := range h.changedBelow(key) {
		if h.past[changed] != nil {
			return true
		}
	}
	return id != 0 && h.anyUnchangedBelow(id, []byte(key))
}

func (h *history) anyUnchangedBelow(id nodeID, dir []byte) bool {
	for el, c := range h.t.children(id) {
		k := append(append(dir, '/'), el...)
		if h.t.at(c).value != nil {
			if _, changed := h.past[string(k)]; !changed {
				return true
			}
		}
		if h.anyUnchangedBelow(c, k) {
			return true
		}
	}
	return false
}

// role is what a node is to its parent's name: there at all (a name, or a path to one), and a
// record of it (a leaf with a value, names.go).
type role struct{ exists, record bool }

func (h *history) roleThen(key string, id nodeID) role {
	v, below := h.value(key, id), h.hadBelow(key, id)
	return role{exists: v != nil || below, record: v != nil && !below}
}

func (h *history) roleNow(id nodeID) role {
	if id == 0 {
		return role{}
	}
	n := h.t.at(id)
	return role{exists: true, record: n.value != nil && n.leaf()}
}

// belowThen and belowNow tell whether the name of the node id had, and has, a name below it
// (Zone.RecordID).
func (h *history) belowThen(key string, id nodeID) bool {
	for rest, changed := range h.changedBelow(key) {
		el, _, _ := strings.Cut(rest, "/")
		if h.past[changed] != nil && askable(el) {
			return true
		}
	}
	if id == 0 {
		return false
	}
	for el, c := range h.t.children(id) {
		if askable(el) && h.roleThen(key+"/"+el, c).exists {
			return true
		}
	}
	return false
}

func (h *history) belowNow(id nodeID) bool {
	if id == 0 {
		return false
	}
	for el := range h.t.children(id) {
		if askable(el) {
			return true
		}
	}
	return false
}

// changedNames are the paths (path elements from the root) of the names of the zone at labels
// whose records a change of the changed keys may have changed, parents before their children.
// A key's own name; and up the tree, a name while the node below it on the way was or is one
// of its records, or stopped or started being a name below it (RecordID). The apex, with the
// names its NS and address records are read from, where one of those changed.
func (h *history) changedNames(ix *Index, labels []string, origin string, apexNames []string) [][]string {
	seen := map[string]bool{}
	var paths [][]string
	add := func(p []string) {
		if k := strings.Join(p, "/"); !seen[k] {
			seen[k] = true
			paths = append(paths, p)
		}
	}
	for _, key := range h.keys {
		elems := ix.elements(key)
		add(elems)
		childRecord := false // the change is of the child's own value
		for n := len(elems); n > len(labels); n-- {
			child, parent := elems[:n], elems[:n-1]
			cid := h.t.node(child)
			then, now := h.roleThen(h.t.keyOf(child), cid), h.roleNow(cid)
			pid := h.t.node(parent)
			pkey := h.t.keyOf(parent)
			if n == len(elems) {
				childRecord = then.record || now.record
			}
			if childRecord || then.record != now.record ||
				then.exists != now.exists && h.belowThen(pkey, pid) != h.belowNow(pid) {
				add(parent)
			}
			if then == now {
				break
			}
			childRecord = false
		}
	}
	apex := false
	for _, p := range paths {
		name, _ := nameOfPath(origin, labels, p)
		apex = apex || len(p) == len(labels) || p[len(labels)] == "dns" || slices.Contains(apexNames, name)
	}
	if apex {
		add(labels)
		add(append(slices.Clip(labels), "dns", "ns"))
		add(append(slices.Clip(labels), "dns", "apex"))
		h.addStorageDirs(labels, add) // subtree.go
	}
	slices.SortFunc(paths, slices.Compare)
	return paths
}

// pastTree is a tree of the names at paths as they were then: each one's own value, and its
// children's, each child with a node below it where it had names below it (so that it is a
// leaf then only where it was one).
func (h *history) pastTree(root string, paths [][]string) *tree {
	pt := newTree(root)
	for _, p := range paths {
		id := h.t.node(p)
		key := h.t.keyOf(p)
		if v := h.value(key, id); v != nil {
			pt.insert(pt.root, p, v)
		}
		for _, el := range h.childLabels(key, id) {
			child := append(slices.Clip(p), el)
			var cid nodeID
			if id != 0 {
				cid = h.t.child(id, el)
			}
			ckey := key + "/" + el
			if v := h.value(ckey, cid); v != nil {
				pt.insert(pt.root, child, v)
			}
			if h.hadBelow(ckey, cid) {
				// Two levels of a label no question reaches: the child is no leaf, and its
				// name has no record and no name more.
				pt.insert(pt.root, append(child, ".", "."), placeholder)
			}
		}
	}
	return pt
}

// placeholder is the value below a child that had names below it, in a pastTree.
var placeholder = &entry{}

// childLabels are the labels of the children of the node at key (id; 0: none now) now, and of
// the changed keys right below it. A label of a changed key is new only where the node has no
// such child now: a look-up, not a scan of the children (the apex may have very many).
func (h *history) childLabels(key string, id nodeID) []string {
	var labels, gone []string
	if id != 0 {
		for el := range h.t.children(id) {
			labels = append(labels, el)
		}
	}
	for rest := range h.changedBelow(key) {
		el, _, _ := strings.Cut(rest, "/")
		if (id == 0 || h.t.child(id, el) == 0) && !slices.Contains(gone, el) {
			gone = append(gone, el)
		}
	}
	return append(labels, gone...)
}

// namesOf is a Zone of the names at paths in t, with the record names below them (where a
// record's target may point: the zone writer's glue, in package xfr), in the health view.
func namesOf(t *tree, origin string, labels []string, paths [][]string, view *healthView) *Zone {
	z := &Zone{Origin: origin, originKey: strings.TrimSuffix(t.keyOf(labels), "/"), last: -1, view: view}
	listed := map[string]bool{}
	for _, p := range paths {
		listed[strings.Join(p, "/")] = true
	}
	for _, p := range paths {
		name, ok := nameOfPath(origin, labels, p)
		id := t.node(p)
		if !ok || id == 0 {
			continue
		}
		z.addName(t, id, name)
		base, dir := len(z.names)-1, strings.Join(p, "/")+"/"
		for el, c := range t.children(id) {
			if !askable(el) {
				continue
			}
			z.names[base].below = true
			if cn := t.at(c); cn.value != nil && cn.leaf() && !listed[dir+el] {
				z.addName(t, c, childName(el, name))
			}
		}
	}
	return z
}

// nameOfPath is the name of the path elements p below the origin's, labels, as record.KeyName
// reads their key; ok is false where no question reaches it (askable), a name the index never
// answers and a transfer leaves out.
func nameOfPath(origin string, labels, p []string) (string, bool) {
	name := origin
	for _, el := range p[len(labels):] {
		if !askable(el) {
			return "", false
		}
		name = childName(el, name)
	}
	return name, true
}
