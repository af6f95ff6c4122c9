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

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Zone is one zone's names as the index held them at one moment, for a zone transfer: taken
// in one short read lock, so that the transfer, which may take seconds to send, holds no
// lock, and is consistent with its serial. Each name answers as with Options.ExactNames
// (names.go), whatever the index's own setting: that is what zone data can say.
//
// Zone is the lookup half of a plugin.ServiceBackend, so that the answers a transfer holds
// are built by the same code as the index's answers. Not safe for concurrent use.
type Zone struct {
	Origin    string // the zone's name, e.g. "openmcp.cluster."
	Revision  int64  // the serial's etcd revision
	serial    uint32 // Revision's low 32 bits, with the zone's offset (steerserial.go)
	view      *healthView
	originKey string // the origin's key, without a "/" at the end
	names     []zoneName
	recs      []zoneRec
	labels    []byte // the labels of the records' keys below their names' keys
	byName    map[string]int
	ttls      leaseTTLs
	minTTL    uint32

	last    int // the name whose set is cached: a transfer asks for each name a few times in a row
	lastSet *answerSet
	plain   answerSet // Plain's set, reused from name to name
	keyed   []rec     // and its records
	strs    strs      // the keys and hosts of the records the zone gives, for all names
	addrs   addresses // and its addresses
}

type zoneName struct {
	name string
	// recs are the name's records, recs[first:end] of the Zone's: its own value (own), then
	// those of its record-id children (names.go).
	first, end uint32
	own        bool
	below      bool // names below it: a question can reach one of its children
}

// zoneRec is a record of a zone: its value, and the label of its key below its name's key,
// labels[off:off+n] of the Zone's.
type zoneRec struct {
	e      *entry
	off, n uint32
}

// Zone copies the names of the zone origin (a lower-cased FQDN); ok is false until the index
// has loaded. Entries are never changed once stored, so the copy holds pointers to them, and
// works out their keys when it needs them.
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
	prefix := ix.zonePrefixOf(msg.Path(origin, ix.opts.Prefix) + "/")
	z.Revision, z.serial, z.view = ix.serials[prefix], ix.serialOfLocked(prefix), ix.view()
	z.ttls = ix.leaseTTLs(maps.Clone(ix.leases))
	t := ix.tree
	id, depth := t.walk(t.root, labels)
	if depth < len(labels) {
		ix.mu.RUnlock()
		return z, true
	}
	z.originKey = strings.TrimSuffix(t.keyOf(labels), "/")
	// Parents first, depth first, as a stack rather than recursion: the walk stops at the end
	// of a chunk and goes on from where it was, the tree being the same.
	type pending struct {
		id   nodeID
		name string
	}
	stack := []pending{{id, origin}}
	z.names = make([]zoneName, 0, capacity)
	z.recs = make([]zoneRec, 0, capacity)
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
		z.addName(t, p.id, p.name)
		// Path elements that no question can reach (upper case, a dot, an escape) are left
		// out with what lies below them: the index never answers them either.
		for el, c := range t.children(p.id) {
			if !askable(el) {
				continue
			}
			z.names[len(z.names)-1].below = true
			stack = append(stack, pending{c, childName(el, p.name)})
		}
	}
	ix.mu.RUnlock()
	return z, true
}

// childName is the name of the path element el below the name parent.
func childName(el, parent string) string {
	if parent == "." {
		return el + "."
	}
	return el + "." + parent
}

// addName appends the name of the node id of t, with its records (names.go). Whether it has
// names below it is the caller's to say.
func (z *Zone) addName(t *tree, id nodeID, name string) {
	zn := zoneName{name: name, first: uint32(len(z.recs))} // #nosec G115 -- a zone holds fewer than 2^32 records
	for c, e := range t.nameRecords(id) {
		r := zoneRec{e: e}
		if c == id {
			zn.own = true
		} else {
			el := t.name(t.at(c))
			r.off, r.n = uint32(len(z.labels)), uint32(len(el)) // #nosec G115 -- as above
			z.labels = append(z.labels, el...)
		}
		z.recs = append(z.recs, r)
	}
	z.steerTransfer(int(zn.first))
	if zn.own && (len(z.recs) == int(zn.first) || z.recs[zn.first].n != 0) {
		zn.own = false // its own value is an owner's that the transfer leaves out
	}
	zn.end = uint32(len(z.recs)) // #nosec G115 -- as above
	z.names = append(z.names, zn)
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
	zn := z.names[i]
	recs := z.recs[zn.first:zn.end]
	if len(recs) == 0 {
		return nil, nil, nil, true
	}
	grouped, named := false, false
	for _, r := range recs {
		e := r.e
		if e.lease != 0 || !e.hasHost() || e.flags&mailFlag != 0 {
			return nil, nil, nil, false
		}
		grouped = grouped || e.more != nil && e.more.group != ""
		named = named || e.flags&(ipv4Flag|ipv6Flag) == 0
	}
	if named && !grouped {
		return nil, nil, nil, false // a host name: a CNAME, or text
	}
	// newAnswerSet's set, without its allocations; and without the CNAME rule unless a
	// group may hide a host name from newAddresses: the rule has nothing to rule on where
	// every host is an address.
	s := &z.plain
	s.services, s.hostless, s.rare = s.services[:0], false, nil
	z.keyed = z.records(i, z.keyed[:0])
	s.addAll(z.keyed, &z.strs)
	if !grouped {
		// addresses.fill's work for records without a group, from the addresses parsed when
		// the records were stored.
		a := &z.addrs
		*a = addresses{plain: true, v4: a.v4[:0], v6: a.v6[:0]}
		for i, r := range recs {
			e := r.e
			switch {
			case hostSeenIn(recs[:i], e):
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
	s.applyCNAMERule(func(i int) int64 { return recs[i].e.created })
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

// hostSeenIn reports whether one of recs has e's host.
func hostSeenIn(recs []zoneRec, e *entry) bool {
	for _, r := range recs {
		if r.e.sameHost(e) {
			return true
		}
	}
	return false
}

// nameKey is the key of the zone's i-th name: the origin's key and the name's labels below
// the origin, in reverse, which are path elements as they are (askable).
func (z *Zone) nameKey(i int) string {
	rest := strings.TrimSuffix(strings.TrimSuffix(z.names[i].name, z.Origin), ".")
	if rest == "" {
		return z.originKey
	}
	m := z.strs.room(len(z.originKey) + len(rest) + 1)
	z.strs.b = append(z.strs.b, z.originKey...)
	for rest != "" {
		j := strings.LastIndexByte(rest, '.')
		z.strs.b = append(append(z.strs.b, '/'), rest[j+1:]...)
		rest = rest[:max(j, 0)]
	}
	return z.strs.since(m)
}

// records appends the records of the zone's i-th name, with their keys, to dst.
func (z *Zone) records(i int, dst []rec) []rec {
	zn := z.names[i]
	key := z.nameKey(i)
	for j := zn.first; j < zn.end; j++ {
		r := z.recs[j]
		k := key
		if !zn.own || j > zn.first {
			m := z.strs.room(len(key) + 1 + int(r.n))
			z.strs.b = append(append(append(z.strs.b, key...), '/'), z.labels[r.off:r.off+r.n]...)
			k = z.strs.since(m)
		}
		dst = append(dst, rec{k, r.e})
	}
	return dst
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
	i, ok := z.Position(name)
	if !ok {
		return nil, ErrNotFound
	}
	if exact {
		zn := z.names[i]
		if !zn.own {
			return nil, ErrNotFound
		}
		return finish(newAnswerSet([]rec{{z.nameKey(i), z.recs[zn.first].e}}), state.QType(), answered, z.ttls), nil
	}
	if z.last != i {
		z.last, z.lastSet = i, newAnswerSet(z.records(i, nil))
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

// MinTTL implements plugin.ServiceBackend.
func (z *Zone) MinTTL(request.Request) uint32 { return z.minTTL }

var _ plugin.ServiceBackend = (*Zone)(nil)

// RecordID tells whether the zone's i-th name is a record id: a leaf below another name of the
// zone whose label is a record label (record.IsRecordID: the 8 hex digits gatewaydns and external-dns
// give each record of a name, ".../app/3e6bee2e", or the x1 or 1 of keys written by hand). Its
// records are its parent's (names.go); the name itself is a storage detail, which a transfer
// leaves out unless a record points at it. The clash count reads keys the same way.
func (z *Zone) RecordID(i int) bool {
	zn := z.names[i]
	if zn.name == z.Origin || !zn.own || zn.below {
		return false
	}
	label, _, _ := strings.Cut(zn.name, ".")
	return record.IsRecordID(label)
}

// Position is the position of name (lower case) among the zone's names.
func (z *Zone) Position(name string) (int, bool) {
	if z.byName == nil {
		z.byName = make(map[string]int, len(z.names))
		for i, zn := range z.names {
			z.byName[zn.name] = i
		}
	}
	i, ok := z.byName[name]
	return i, ok
}
