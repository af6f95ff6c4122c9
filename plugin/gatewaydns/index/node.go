package index

import (
	"cmp"
	"net"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"
)

// entry is one decoded value.
type entry struct {
	svc    msg.Service // with the stock defaults for TTL and priority applied
	ttl    uint32      // the value's own ttl, 0 when absent: lease arithmetic needs to know
	lease  int64
	origin origin
	// created is the key's create revision: which of a CNAME and other data answers (cname.go).
	created int64
	// ip is the host as msg.Service.HostType makes it an address, ipLen bytes of it (0: the
	// host is a name, or there is none), worked out once: a transfer asks it of every record
	// of the zone, twice, and parsing it took a sixth of the transfer's work, and garbage.
	ip    [16]byte
	ipLen uint8
}

// setAddress works out e.ip from e's host.
func (e *entry) setAddress() {
	if what, ip := e.svc.HostType(); what == dns.TypeA || what == dns.TypeAAAA {
		e.ipLen = uint8(copy(e.ip[:], ip)) // #nosec G115 -- 4 or 16
	}
}

// address is e's host as an address, nil when it is none; it shares e's array.
func (e *entry) address() net.IP {
	if e.ipLen == 0 {
		return nil
	}
	return e.ip[:e.ipLen:e.ipLen]
}

// origin is where a record came from, for Explain.
type origin struct {
	owner    string
	sources  []string
	revision int64
	seen     int64 // when this server learned the value, in Unix nanoseconds (a time.Time is 24 bytes)
}

// node is one path element of the key tree. Children and value change only under the index's
// write lock; the cached answer sets are filled by readers under the read lock, and reset on
// every write at or below the node.
type node struct {
	children children
	value    *entry

	below atomic.Pointer[answerSet] // what a subtree read of this key returns
	exact atomic.Pointer[answerSet] // what an exact read of this key returns
	names atomic.Pointer[answerSet] // what the name answers with exact names (names.go)
}

// stale drops what a write at or below n changes: the subtree read and the exact-names set
// (a child that becomes, or stops being, a record of the name).
func (n *node) stale() {
	n.below.Store(nil)
	n.names.Store(nil)
}

// answerSet is the records of one read, sorted by key as etcd returns them. Every name asked
// for holds one per level of its key, so what few sets need sits behind one pointer.
type answerSet struct {
	services []msg.Service
	hostless bool                      // some record has only text: leave it out unless TXT is asked
	addrs    atomic.Pointer[addresses] // worked out on the first A or AAAA question
	rare     *rareParts                // nil for a set of plain records
}

// rareParts are the parts of an answer set that few sets have.
type rareParts struct {
	leased []leasedRecord // by position, ascending
	// ruled is set only when the records mix a CNAME with other data, or hold two CNAMEs: what
	// A, AAAA, TXT and CNAME questions are answered from instead (cname.go).
	ruled *ruledSets
}

func (s *answerSet) leased() []leasedRecord {
	if s.rare == nil {
		return nil
	}
	return s.rare.leased
}

func (s *answerSet) ruled() *ruledSets {
	if s.rare == nil {
		return nil
	}
	return s.rare.ruled
}

func (s *answerSet) addLeased(lr leasedRecord) {
	if s.rare == nil {
		s.rare = &rareParts{}
	}
	s.rare.leased = append(s.rare.leased, lr)
}

// Address is one record of an A or AAAA answer.
type Address struct {
	IP  net.IP
	TTL uint32
}

// addresses is what plugin.A and plugin.AAAA make of an answer set without CNAMEs and leases
// (plain): the addresses of each family, in key order, the first of each host only, of the
// records that msg.Group keeps.
type addresses struct {
	plain  bool
	v4, v6 []Address
	// text: some record with a host is text under a host name (msg.Service.HostType says TXT),
	// which A and AAAA answers leave out and TXT answers hold.
	text bool
}

// addresses works out the set's addresses once; readers that race to do it store the same.
func (s *answerSet) addresses() *addresses {
	if a := s.addrs.Load(); a != nil {
		return a
	}
	a := newAddresses(s)
	s.addrs.Store(a)
	return a
}

func newAddresses(s *answerSet) *addresses {
	a := new(addresses)
	a.fill(s)
	return a
}

// fill sets a to s's addresses, reusing a's arrays: a transfer works them out for every name
// of a zone, and their garbage would delay the queries answered meanwhile.
func (a *addresses) fill(s *answerSet) {
	*a = addresses{v4: a.v4[:0], v6: a.v6[:0]}
	if len(s.leased()) > 0 {
		return
	}
	sx := s.services
	if s.hostless {
		sx = withHost(sx) // as finish leaves them out of an A or AAAA answer
	}
	a.plain = true
	sx = group(sx)
	// A name has few records, and a scan of the ones before beats a map; a subtree's set (the
	// apex's holds every record of the zone) needs the map.
	var seen map[string]bool
	if len(sx) > scanHosts {
		seen = make(map[string]bool, len(sx))
	}
	for i, svc := range sx {
		what, ip := svc.HostType()
		switch {
		case what == dns.TypeCNAME:
			*a = addresses{v4: a.v4[:0], v6: a.v6[:0]}
			return
		case what == dns.TypeTXT:
			a.text = true
		case seen != nil && seen[svc.Host], seen == nil && hostSeen(sx[:i], svc.Host):
		case what == dns.TypeA:
			a.v4 = append(a.v4, Address{IP: ip, TTL: svc.TTL})
		case what == dns.TypeAAAA:
			a.v6 = append(a.v6, Address{IP: ip, TTL: svc.TTL})
		}
		if seen != nil {
			seen[svc.Host] = true
		}
	}
}

// group is msg.Group, which returns services that name no group as they are, without its
// work for them (a count of each key's slashes, an array): nearly every name's, and asked for
// every name of a transfer, twice.
func group(sx []msg.Service) []msg.Service {
	for i := range sx {
		if sx[i].Group != "" {
			return msg.Group(sx)
		}
	}
	return sx
}

// scanHosts is the most records whose hosts fill checks for duplicates by a scan.
const scanHosts = 16

// hostSeen reports whether one of sx has host.
func hostSeen(sx []msg.Service, host string) bool {
	for _, s := range sx {
		if s.Host == host {
			return true
		}
	}
	return false
}

// leasedRecord marks a record whose TTL follows its lease's remaining life.
type leasedRecord struct {
	pos   int
	lease int64
	ttl   uint32
}

func (s *answerSet) leasedAt(pos int) (leasedRecord, bool) {
	for _, lr := range s.leased() {
		if lr.pos == pos {
			return lr, true
		}
	}
	return leasedRecord{}, false
}

func (s *answerSet) add(e *entry) {
	if e.lease != 0 {
		s.addLeased(leasedRecord{pos: len(s.services), lease: e.lease, ttl: e.ttl})
	}
	if e.svc.Host == "" {
		s.hostless = true
	}
	s.services = append(s.services, e.svc)
}

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
	for _, el := range elems {
		n.stale()
		c := n.children.get(el)
		if c == nil {
			c = &node{}
			n.children.set(el, c)
		}
		n = c
	}
	n.stale()
	n.exact.Store(nil)
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
	n.value = nil
	n.exact.Store(nil)
	for _, p := range path {
		p.stale()
	}
	for i := len(path) - 1; i > 0; i-- {
		if p := path[i]; p.value != nil || p.children.len() > 0 {
			break
		}
		path[i-1].children.remove(elems[i-1])
	}
	return true
}

// graft puts sub in place of the node at path (creating the nodes on the way), keeps a value
// that sat at that node itself, and returns how many values the replaced subtree held. An
// empty sub removes the node, and the nodes left empty above it.
func (n *node) graft(path []string, sub *node) (removed int) {
	if len(path) == 0 {
		removed = n.countValues()
		n.children = sub.children
		n.stale()
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
		p.stale()
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

// answerSet is what a stock prefix read of this key finds: every record strictly below it, or,
// when there is none, its own. Nil when neither exists.
func (n *node) answerSet() *answerSet {
	if s := n.below.Load(); s != nil {
		return s
	}
	var entries []*entry
	switch {
	case n.children.len() > 0:
		for c := range n.children.all {
			entries = c.collect(entries)
		}
		slices.SortFunc(entries, func(a, b *entry) int { return cmp.Compare(a.svc.Key, b.svc.Key) })
	case n.value != nil:
		entries = []*entry{n.value}
	default:
		return nil
	}
	s := newAnswerSet(entries)
	n.below.Store(s)
	return s
}

// newAnswerSet is the set of entries, sorted by key, with the CNAME rule applied.
func newAnswerSet(entries []*entry) *answerSet {
	if len(entries) == 1 {
		s := singleSet(entries[0])
		s.applyCNAMERule(func(int) int64 { return entries[0].created })
		return s
	}
	s := &answerSet{services: make([]msg.Service, 0, len(entries))}
	for _, e := range entries {
		s.add(e)
	}
	s.applyCNAMERule(func(i int) int64 { return entries[i].created })
	return s
}

// singleSet is the set of one entry. Its record is the entry's own, not a copy: most names
// hold one record, and the copy was a third of what asking for a name once cost in memory
// (BenchmarkIndexMemory). That is safe because an entry never changes once stored, and a set's
// records are never changed in place: finish copies them before it sets a lease's TTL, as
// every caller must, since sets are shared by every question.
func singleSet(e *entry) *answerSet {
	s := &answerSet{services: unsafe.Slice(&e.svc, 1)}
	if e.lease != 0 {
		s.addLeased(leasedRecord{pos: 0, lease: e.lease, ttl: e.ttl})
	}
	s.hostless = e.svc.Host == ""
	return s
}

// exactSet is what an exact read of this key finds; the caller checks that there is a value.
func (n *node) exactSet() *answerSet {
	if s := n.exact.Load(); s != nil {
		return s
	}
	s := singleSet(n.value)
	n.exact.Store(s)
	return s
}

func (n *node) collect(entries []*entry) []*entry {
	if n.value != nil {
		entries = append(entries, n.value)
	}
	for c := range n.children.all {
		entries = c.collect(entries)
	}
	return entries
}
