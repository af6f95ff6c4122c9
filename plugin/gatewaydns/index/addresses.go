package index

import (
	"context"
	"net"

	"github.com/coredns/coredns/request"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"
)

// AppendAddresses appends to dst what plugin.A (qtype A) or plugin.AAAA (qtype AAAA) answers
// from Records for a name below the apex, whenever that answer is made of the name's
// addresses alone: no CNAME to chase, no lease to count down, no query wildcard. ok is false
// otherwise, and the caller asks plugin.A. A name of a few records of plain addresses (the
// writer's layout) is answered from its entries as they are, caching nothing; other names from
// their cached answer set, whose addresses are worked out once, not per question. err is
// ErrNotFound where Records says so. The IPs refer into the index: the caller must not change
// them.
func (ix *Index) AppendAddresses(dst []Address, name string, qtype uint16) (addrs []Address, ok bool, err error) {
	return ix.AppendAnswer(dst, name, qtype, Asker{})
}

// AppendAnswer is AppendAddresses for a question asked by a: a name answered from a choice
// among its owners (steerset.go) gives the addresses of the owners chosen for a.
func (ix *Index) AppendAnswer(dst []Address, name string, qtype uint16, a Asker) (addrs []Address, ok bool, err error) {
	var buf [maxLabels]string
	labels, star := ix.labels(buf[:0], name)
	if star >= 0 {
		return dst, false, nil
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	id, depth := ix.tree.find(labels)
	if id == 0 {
		return dst, true, ErrNotFound
	}
	if addrs, ok := ix.plainAddresses(dst, id, qtype, a.placing()); ok {
		return addrs, true, nil
	}
	set := ix.nameSet(id, labels, depth)
	if set == nil {
		return dst, true, ErrNotFound
	}
	qs := set.forQuestion(qtype)
	if addrs, steered, ok := ix.steeredAddresses(dst, qs, qtype, &a); steered {
		return addrs, ok, nil
	}
	as := qs.addresses()
	if !as.plain {
		return dst, false, nil
	}
	if qtype == dns.TypeAAAA {
		return append(dst, as.v6...), true, nil
	}
	return append(dst, as.v4...), true, nil
}

// AppendAsked is AppendAnswer for the asker of the question of state, placed by no locality,
// drawing with the draw ctx carries (WithDraw) where it carries one.
func (ix *Index) AppendAsked(ctx context.Context, dst []Address, state request.Request, qtype uint16) (addrs []Address, ok bool, err error) {
	a := Asker{W: state.W, Req: state.Req}
	a.Draw, a.Drawn = DrawOf(ctx)
	return ix.AppendAnswer(dst, state.Name(), qtype, a)
}

// Addresses is AppendAddresses to a new slice.
func (ix *Index) Addresses(name string, qtype uint16) (addrs []Address, ok bool, err error) {
	return ix.AppendAddresses(nil, name, qtype)
}

// maxPlain is the most records of a name that plainAddresses answers from: no more than a
// node keeps as a list (children.go), the only children it goes over.
const maxPlain = 8

var _ [maxFew - maxPlain]struct{} // maxPlain <= maxFew

// plainAddresses appends the addresses of n's name to dst when the name's records are at most
// maxPlain plain addresses (entry.plainAddress) and no more than a read gives: what
// answerSet.addresses makes of them, without a set. ok is false for any other name, and, when
// the stanza places clients (placing), for a name of several owners (steerset.go).
func (ix *Index) plainAddresses(dst []Address, id nodeID, qtype uint16, placing bool) (addrs []Address, ok bool) {
	t := ix.tree
	n := t.at(id)
	var buf [maxPlain]*entry
	entries := buf[:0]
	if (ix.opts.ExactNames || n.leaf()) && n.value != nil {
		entries = append(entries, n.value)
	}
	if n.many() != 0 {
		return dst, false // more children than maxPlain
	}
	for c := n.first(); c != 0; {
		cn := t.at(c)
		switch {
		case cn.leaf() && cn.value != nil:
			if len(entries) == maxPlain {
				return dst, false
			}
			entries = append(entries, cn.value)
		case !ix.opts.ExactNames:
			return dst, false // records further down: a read of the subtree
		}
		c = cn.next
	}
	if len(entries) == 0 || len(entries) > maxPlain || len(entries) > ix.opts.MaxRecords {
		return dst, false
	}
	for _, e := range entries {
		if !e.plainAddress() || placing && e.ownerName() != entries[0].ownerName() {
			return dst, false
		}
	}
Entries:
	for i, e := range entries {
		for _, prev := range entries[:i] {
			if prev.sameHost(e) {
				continue Entries // as plugin.A leaves out a host it has answered
			}
		}
		if a, ok := e.address(qtype); ok {
			dst = append(dst, a)
		}
	}
	return dst, true
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

// notPlain is the addresses of every set that is not plain and has no text: all the same, so
// that a name of CNAMEs or SRV targets keeps no object of its own for them.
var notPlain = &addresses{}

func newAddresses(s *answerSet) *addresses {
	a := new(addresses)
	a.fill(s)
	if !a.plain && !a.text && len(a.v4) == 0 && len(a.v6) == 0 {
		return notPlain
	}
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
