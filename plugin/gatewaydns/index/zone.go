package index

import (
	"context"
	"errors"
	"maps"
	"strings"
	"unicode/utf8"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
)

// Zone is one zone's names as the index held them at one moment, for a zone transfer: taken
// in one short read lock, so that the transfer, which may take seconds to send, holds no
// lock, and is consistent with its serial. Each name answers as with Options.ExactNames
// (names.go), whatever the index's own setting: that is what zone data can say.
//
// Zone is the lookup half of a plugin.ServiceBackend, so that the answers a transfer holds
// are built by the same code as the index's answers. Not safe for concurrent use.
type Zone struct {
	Origin   string // the zone's name, e.g. "openmcp.cluster."
	Revision int64  // the serial's etcd revision
	names    []zoneName
	byName   map[string]int
	ttls     leaseTTLs
	minTTL   uint32

	last    int // the name whose set is cached: a transfer asks for each name a few times in a row
	lastSet *answerSet
	plain   answerSet // Plain's set, reused from name to name
	addrs   addresses // and its addresses
}

type zoneName struct {
	name    string
	own     *entry   // the value at the name's own key, for exact reads
	entries []*entry // own and record-id children (names.go)
}

// Zone copies the names of the zone origin (a lower-cased FQDN); ok is false until the index
// has loaded. Entries are never changed once stored, so the copy holds pointers to them.
//
// With pause nil the copy is taken in one read lock. Otherwise it is taken in chunks of
// zoneChunk names, between which the lock is released and pause called (the caller may sleep
// there, so that copying a large zone does not keep the CPU from queries). A write to the
// index between two chunks makes the copy start over, so that it is still the zone at one
// revision; after zoneTries such starts the copy is taken in one lock.
func (ix *Index) Zone(origin string, pause func()) (z *Zone, ok bool) {
	if !ix.Loaded() {
		return nil, false
	}
	for try := 1; ; try++ {
		if try == zoneTries {
			pause = nil
		}
		if z, ok := ix.zone(origin, pause); ok {
			ix.zoneLens.Store(origin, len(z.names))
			return z, true
		}
	}
}

const (
	zoneChunk = 512
	zoneTries = 3
)

// zone is one try of Zone: ok is false when a write came between two chunks.
func (ix *Index) zone(origin string, pause func()) (z *Zone, ok bool) {
	var buf [16]string
	labels, _ := ix.labels(buf[:0], origin)
	z = &Zone{Origin: origin, last: -1, minTTL: ix.MinTTL(request.Request{})}
	capacity := 16
	if n, ok := ix.zoneLens.Load(origin); ok {
		capacity = n.(int) + n.(int)/8
	}
	ix.mu.RLock()
	gen := ix.gen
	z.Revision = ix.serials[ix.prefixOf(msg.Path(origin, ix.opts.Prefix)+"/")]
	z.ttls = ix.leaseTTLs(maps.Clone(ix.leases))
	n, depth := ix.tree.walk(labels)
	if depth < len(labels) {
		ix.mu.RUnlock()
		return z, true
	}
	// Parents first, depth first, as a stack rather than recursion: the walk stops at the end
	// of a chunk and goes on from where it was, the tree being the same.
	type pending struct {
		n    *node
		name string
	}
	stack := []pending{{n, origin}}
	z.names = make([]zoneName, 0, capacity)
	entries := make([]*entry, 0, capacity) // every name's entries, one array for most of them
	for len(stack) > 0 {
		if pause != nil && len(z.names) > 0 && len(z.names)%zoneChunk == 0 {
			ix.mu.RUnlock()
			pause()
			ix.mu.RLock()
			if ix.gen != gen {
				ix.mu.RUnlock()
				return nil, false
			}
		}
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		start := len(entries)
		entries = p.n.nameEntries(entries, 0)
		z.names = append(z.names, zoneName{name: p.name, own: p.n.value, entries: entries[start:len(entries):len(entries)]})
		// Path elements that no question can reach (upper case, a dot, an escape) are left
		// out with what lies below them: the index never answers them either.
		for el, c := range p.n.children.named {
			if !askable(el) {
				continue
			}
			child := el + "." + p.name
			if p.name == "." {
				child = el + "."
			}
			stack = append(stack, pending{c, child})
		}
	}
	ix.mu.RUnlock()
	return z, true
}

// askable reports whether a question can reach the path element el: not empty, no dot, escape
// or space, and lower case. It is asked of every name of a transfer: one pass over the bytes,
// where strings.ContainsAny and strings.ToLower took a third of copying the zone.
func askable(el string) bool {
	if el == "" {
		return false
	}
	for i := 0; i < len(el); i++ {
		switch c := el[i]; {
		case c == '.' || c == '\\' || c == ' ' || 'A' <= c && c <= 'Z':
			return false
		case c >= utf8.RuneSelf:
			return !strings.ContainsAny(el, `.\ `) && strings.ToLower(el) == el
		}
	}
	return true
}

// Names yields every name of the zone, the origin first.
func (z *Zone) Names(yield func(string) bool) {
	for _, zn := range z.names {
		if !yield(zn.name) {
			return
		}
	}
}

// Len is how many names the zone holds, empty non-terminals included.
func (z *Zone) Len() int { return len(z.names) }

// Name is the zone's i-th name, in the order of Names.
func (z *Zone) Name(i int) string { return z.names[i].name }

// Plain tells whether the i-th name's records are addresses and nothing else a question
// could tell apart: no lease, no text, no mail, no host name (so no CNAME, and the CNAME rule
// has nothing to rule on). Then services is what Services gives the name for every question,
// and v4 and v6 what A and AAAA questions are answered with, worked out as for Index.Addresses;
// a transfer builds the name's records from them rather than through the plugin lookups. An
// empty non-terminal is plain, with no records. ok is false for every other name. services,
// v4 and v6 are only good until the next call (their arrays are reused).
func (z *Zone) Plain(i int) (services []msg.Service, v4, v6 []Address, ok bool) {
	entries := z.names[i].entries
	if len(entries) == 0 {
		return nil, nil, nil, true
	}
	grouped := false
	for _, e := range entries {
		if e.lease != 0 || e.host == "" || e.flags&mailFlag != 0 {
			return nil, nil, nil, false
		}
		grouped = grouped || e.more != nil && e.more.group != ""
	}
	// newAnswerSet's set, without its allocations; and without the CNAME rule unless a
	// group may hide a host name from newAddresses: the rule has nothing to rule on where
	// every host is an address, which is found out below.
	s := &z.plain
	s.services, s.hostless, s.rare = s.services[:0], false, nil
	for _, e := range entries {
		s.add(e)
	}
	if !grouped {
		// addresses.fill's work for records without a group, from the addresses parsed when
		// the records were stored.
		a := &z.addrs
		*a = addresses{plain: true, v4: a.v4[:0], v6: a.v6[:0]}
		for i, e := range entries {
			switch {
			case e.flags&(ipv4Flag|ipv6Flag) == 0:
				return nil, nil, nil, false // a host name: a CNAME, or text
			case hostSeenIn(entries[:i], e.host):
			case e.flags&ipv4Flag != 0:
				v4, _ := e.address(dns.TypeA)
				a.v4 = append(a.v4, v4)
			default:
				v6, _ := e.address(dns.TypeAAAA)
				a.v6 = append(a.v6, v6)
			}
		}
		return s.services, a.v4, a.v6, true
	}
	s.applyCNAMERule(func(i int) int64 { return entries[i].created })
	if s.rare != nil {
		return nil, nil, nil, false
	}
	a := &z.addrs
	a.fill(s)
	if !a.plain || a.text {
		return nil, nil, nil, false
	}
	return group(s.services), a.v4, a.v6, true
}

// hostSeenIn reports whether one of entries has host.
func hostSeenIn(entries []*entry, host string) bool {
	for _, e := range entries {
		if e.host == host {
			return true
		}
	}
	return false
}

// errNoUpstream: a transfer holds the zone's own data; it never resolves names elsewhere.
var errNoUpstream = errors.New("zone transfers do not look outside the zone")

// Services implements plugin.ServiceBackend.
func (z *Zone) Services(ctx context.Context, state request.Request, exact bool, _ plugin.Options) ([]msg.Service, error) {
	sx, err := z.Records(ctx, state, exact)
	if err != nil {
		return nil, err
	}
	return group(sx), nil
}

// Records implements plugin.ServiceBackend: the name's records with exact names.
func (z *Zone) Records(_ context.Context, state request.Request, exact bool) ([]msg.Service, error) {
	name := state.Name()
	for strings.Contains(name, "..") {
		// plugin.NS asks for dnsutil.Join("ns.dns.", zone), which has one; the index's
		// msg.Path reads it as one dot, and so does the zone.
		name = strings.ReplaceAll(name, "..", ".")
	}
	if z.byName == nil {
		z.byName = make(map[string]int, len(z.names))
		for i, zn := range z.names {
			z.byName[zn.name] = i
		}
	}
	i, ok := z.byName[name]
	if !ok {
		return nil, ErrNotFound
	}
	if exact {
		if z.names[i].own == nil {
			return nil, ErrNotFound
		}
		return finish(newAnswerSet([]*entry{z.names[i].own}), state.QType(), answered, z.ttls), nil
	}
	if z.last != i {
		z.last, z.lastSet = i, newAnswerSet(z.names[i].entries)
	}
	return finish(z.lastSet, state.QType(), answered, z.ttls), nil
}

// Reverse implements plugin.ServiceBackend.
func (z *Zone) Reverse(ctx context.Context, state request.Request, exact bool, opt plugin.Options) ([]msg.Service, error) {
	return z.Services(ctx, state, exact, opt)
}

// Lookup implements plugin.ServiceBackend: never, see errNoUpstream.
func (z *Zone) Lookup(context.Context, request.Request, string, uint16) (*dns.Msg, error) {
	return nil, errNoUpstream
}

// IsNameError implements plugin.ServiceBackend.
func (z *Zone) IsNameError(err error) bool { return errors.Is(err, ErrNotFound) }

// Serial implements plugin.ServiceBackend.
func (z *Zone) Serial(request.Request) uint32 {
	return uint32(z.Revision) // #nosec G115 -- RFC 1982 serial arithmetic wraps by design
}

// MinTTL implements plugin.ServiceBackend.
func (z *Zone) MinTTL(request.Request) uint32 { return z.minTTL }

var _ plugin.ServiceBackend = (*Zone)(nil)
