// Package index is the in-memory zone that the serve path answers from. It mirrors the etcd
// keys under its prefixes (one per zone, below one root) as a tree of path elements, and answers the lookups that the stock
// etcd plugin makes with one etcd read per query (subtree, exact key, query wildcards), plus
// RFC 4592 wildcards for stored "*" names. It implements the lookup half of
// plugin.ServiceBackend, so that CoreDNS's own plugin.A, plugin.SRV, ... build the answers.
//
// Reads take a read lock and, once a name has been asked for, allocate nothing for its records:
// the flattened answer set of every queried node is cached until a write changes it. A read
// that spans a subtree stops after Options.MaxRecords records (walk.go).
package index

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Defaults of the stock etcd plugin, kept so that its data answers the same here.
const (
	DefaultTTL         = 300
	defaultPriority    = 10
	DefaultMinLeaseTTL = 30
	DefaultMaxLeaseTTL = 86400
	// DefaultNegativeTTL is the SOA minimum the stock etcd plugin gives: how long resolvers
	// cache NXDOMAIN and NODATA (RFC 2308).
	DefaultNegativeTTL = 30
	// MaxNegativeTTL is the most a negative answer can be cached: CoreDNS's plugin.SOA gives the
	// SOA record itself a TTL of at most 300, and a resolver caches the smaller of the two.
	MaxNegativeTTL = 300
)

// ErrNotFound is the name error: no key at or below the name.
var ErrNotFound = errors.New("key not found")

// ErrNotLoaded is what a question, or a zone transfer, gets before the first full load (a
// SERVFAIL): "no such name" then would be a lie that resolvers cache.
var ErrNotLoaded = errors.New("records not loaded from etcd yet")

// ErrTooBroad: a question with a query wildcard ("*" or "any") whose read visited as many nodes
// as it may (walk.go) without finding a record, so that it cannot tell NXDOMAIN from an answer.
var ErrTooBroad = errors.New("query wildcard read too many keys without a match")

// Options tune the answers.
type Options struct {
	Prefix      string // etcd path prefix, "skydns" by default
	MinLeaseTTL uint32 // clamp for the remaining life of a leased key
	MaxLeaseTTL uint32
	// NegativeTTL is the SOA minimum (RFC 2308 negative caching); nil: DefaultNegativeTTL.
	NegativeTTL *uint32
	// Invalid is told of every value that is skipped, once per key and value; may be nil.
	Invalid func(key string, err error)
	// Clash is told when the records of a name start (true) or stop (false) mixing a CNAME
	// with other data (clash.go), and how many names do now; may be nil.
	Clash func(name string, clash bool, names int)
	// Now is the clock for lease TTLs; time.Now when nil.
	Now func() time.Time
	// Prefixes are the key prefixes the index mirrors, each loaded on its own (one per zone,
	// so that a server needs read access to its zones only); the root when empty.
	Prefixes []string
	// ZonePrefixes are the key prefixes of the zones, each with a serial of its own
	// (serial.go); nested zones are each their own, where Prefixes holds the outer one only.
	// Prefixes when empty.
	ZonePrefixes []string
	// ExactNames answers a name from its own key and its record-id children only, as a plain
	// zone (and a secondary that transferred it) would: see names.go. Off: the stock plugin's
	// subtree reads and query wildcards.
	ExactNames bool
	// MaxRecords is the most records one read answers a question from, the first in key
	// order (walk.go); 0: DefaultMaxRecords.
	MaxRecords int
	// JournalChanges is how many changes the journal of incremental transfers holds
	// (journal.go); 0: DefaultJournalChanges, below 0: none, every IXFR is the whole zone.
	JournalChanges int
	// FailOpen is told when a name starts (true) or stops (false) having no eligible owner:
	// every owner's checked addresses held down, so that it answers all of them (health.go),
	// and how many names do now; may be nil.
	FailOpen func(name string, failing bool, names int)
}

// Index holds the records under one root, loaded prefix by prefix (Options.Prefixes).
type Index struct {
	opts Options
	root string // record.Root(prefix)

	mu      sync.RWMutex
	tree    *tree
	count   int
	leases  map[int64]time.Time     // lease -> when it expires, as last read from etcd
	invalid map[string]invalidValue // key -> the value that was rejected, to report each once
	digests map[string]*Digest      // loaded prefix -> what it holds, for the consistency check
	clashes map[string]bool         // path of a name whose records mix a CNAME with other data
	serials map[string]int64        // prefix -> revision of its last change (serial.go)
	journal journal                 // the changes an incremental transfer is made of

	// Steering: the health-checked records (checks.go), the health of their addresses
	// (health.go), the names that fail open, the offsets of their zones' serials
	// (steerserial.go).
	checks       checks
	health       atomic.Pointer[healthView]
	failing      map[string]bool
	steerSerials map[string]*steerSerial
	// storeBarriers are, per zone prefix, the serial the zone had when a load found etcd to be
	// a new store (newstore.go): no IXFR is made from it or an earlier one.
	storeBarriers map[string]uint32

	// gen counts the writes to the tree and the serials, so that a zone copied in chunks
	// (zone.go) tells whether it saw one.
	gen uint64
	// zoneLens is how many names each zone copy last held (origin -> int): the next copy's
	// capacity.
	zoneLens sync.Map

	loadedPrefixes map[string]bool
	loaded         atomic.Bool // every prefix of Options.Prefixes has been loaded
}

// New returns an empty index; it answers nothing until Load.
func New(opts Options) *Index {
	if opts.Prefix == "" {
		opts.Prefix = record.DefaultPrefix
	}
	if opts.MinLeaseTTL == 0 {
		opts.MinLeaseTTL = DefaultMinLeaseTTL
	}
	if opts.MaxLeaseTTL == 0 {
		opts.MaxLeaseTTL = DefaultMaxLeaseTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxRecords <= 0 {
		opts.MaxRecords = DefaultMaxRecords
	}
	root := record.Root(opts.Prefix)
	if len(opts.Prefixes) == 0 {
		opts.Prefixes = []string{root}
	}
	if len(opts.ZonePrefixes) == 0 {
		opts.ZonePrefixes = opts.Prefixes
	}
	if opts.JournalChanges == 0 {
		opts.JournalChanges = DefaultJournalChanges
	}
	ix := &Index{
		journal:        journal{limit: opts.JournalChanges},
		opts:           opts,
		root:           root,
		tree:           newTree(root),
		leases:         map[int64]time.Time{},
		invalid:        map[string]invalidValue{},
		digests:        map[string]*Digest{},
		clashes:        map[string]bool{},
		serials:        map[string]int64{},
		loadedPrefixes: map[string]bool{},
		checks:         newChecks(),
		failing:        map[string]bool{},
		steerSerials:   map[string]*steerSerial{},
	}
	ix.health.Store(&healthView{})
	return ix
}

// Root is the key prefix of the records, e.g. "/skydns/".
func (ix *Index) Root() string { return ix.root }

// ExactNames tells whether names answer as in a plain zone (Options.ExactNames).
func (ix *Index) ExactNames() bool { return ix.opts.ExactNames }

// Loaded tells whether every prefix has been loaded once.
func (ix *Index) Loaded() bool { return ix.loaded.Load() }

// Len is the number of records held.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.count
}

// Services implements plugin.ServiceBackend: the records for the question's name, grouped.
func (ix *Index) Services(ctx context.Context, state request.Request, exact bool, _ plugin.Options) ([]msg.Service, error) {
	sx, err := ix.Records(ctx, state, exact)
	if err != nil {
		return nil, err
	}
	return group(sx), nil
}

// Reverse implements plugin.ServiceBackend.
func (ix *Index) Reverse(ctx context.Context, state request.Request, exact bool, opt plugin.Options) ([]msg.Service, error) {
	return ix.Services(ctx, state, exact, opt)
}

// IsNameError implements plugin.ServiceBackend.
func (ix *Index) IsNameError(err error) bool { return errors.Is(err, ErrNotFound) }

// MinTTL implements plugin.ServiceBackend: the SOA minimum, the negative-caching TTL.
func (ix *Index) MinTTL(request.Request) uint32 {
	if ix.opts.NegativeTTL != nil {
		return *ix.opts.NegativeTTL
	}
	return DefaultNegativeTTL
}

// Records implements plugin.ServiceBackend: the records a stock etcd plugin would read for the
// question's name. Not exact: the records of every key below the name's key, or, when there
// is none, of the name's own key. Exact: only the name's own key. A "*" or "any" label in the
// question matches any label at that position. A name that is not there is answered by a
// stored "*" wildcard that covers it, as RFC 4592 says. A read that spans more than
// Options.MaxRecords records returns the first of them in key order (walk.go).
func (ix *Index) Records(_ context.Context, state request.Request, exact bool) ([]msg.Service, error) {
	return ix.RecordsAsked(state, exact, Asker{W: state.W, Req: state.Req})
}

// view says which records of a read to return.
type view uint8

const (
	answered   view = iota // what a question of the type is answered from
	everything             // every record the read finds, the CNAME rule's left-outs included (for Explain)
)

// records is the records of a read, and whether the read was cut at the answer limit; a is who
// asks (nil: every record, with no choice among owners).
func (ix *Index) records(name string, qtype uint16, exact bool, v view, a *Asker) (sx []msg.Service, cut bool, err error) {
	var buf [maxLabels]string
	labels, star := ix.labels(buf[:0], name)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var set *answerSet
	if star >= 0 {
		if set, err = ix.wildcardQuery(labels, star); err != nil {
			return nil, false, err
		}
		return ix.finish(ix.chosenSet(set, qtype, a), qtype, v), set.cut(), nil
	}
	t := ix.tree
	switch id, depth := t.find(labels); {
	case id == 0:
		return nil, false, ErrNotFound
	case exact:
		if t.at(id).value == nil {
			return nil, false, ErrNotFound
		}
		set = t.exactSet(id, pathOf(labels, depth))
	default:
		if set = ix.nameSet(id, labels, depth); set == nil {
			return nil, false, ErrNotFound
		}
	}
	return ix.finish(ix.chosenSet(set, qtype, a), qtype, v), set.cut(), nil
}

// pathOf is the path elements of the node that tree.find found for labels at depth: the
// labels, or where it found a stored wildcard, the labels before it and "*".
func pathOf(labels []string, depth int) []string {
	if depth < len(labels) {
		return append(labels[:depth:depth], "*")
	}
	return labels
}

// nameSet is what a question for the name of id, found for labels at depth, is answered
// from: its subtree, or with ExactNames its own records. Nil: the name does not exist.
func (ix *Index) nameSet(id nodeID, labels []string, depth int) *answerSet {
	if ix.opts.ExactNames {
		if s := ix.tree.cached(id, namesSet); s != nil {
			return s
		}
		return ix.tree.namesSet(id, pathOf(labels, depth), ix.opts.MaxRecords)
	}
	if s := ix.tree.cached(id, belowSet); s != nil {
		return s
	}
	return ix.tree.answerSet(id, pathOf(labels, depth), ix.opts.MaxRecords)
}

// labels appends to dst the path elements of a lower-cased query name's key, and reports the
// position of the first "*" or "any" label (-1 when none), as msg.PathWithWildcard does. A
// name with an escape, a "/" or an empty label takes msg.Path's way, which path.Join cleans;
// any other name's elements are its labels reversed: msg.Path's result, without allocating.
func (ix *Index) labels(dst []string, name string) ([]string, int) {
	if strings.ContainsAny(name, `\/`) || strings.Contains(name, "..") {
		elems := ix.elements(msg.Path(name, ix.opts.Prefix) + "/")
		dst = append(dst, elems[:max(len(elems)-1, 0)]...)
	} else {
		name = strings.TrimSuffix(name, ".")
		for name != "" {
			i := strings.LastIndexByte(name, '.')
			dst = append(dst, name[i+1:])
			name = name[:max(i, 0)]
		}
	}
	star := -1
	if ix.opts.ExactNames {
		return dst, star // a plain zone has no query wildcards: "*" is a name like any other
	}
	for i, l := range dst {
		if isQueryWildcard(l) {
			star = i
			break
		}
	}
	return dst, star
}

// wildcardQuery is what a question with a "*" or "any" label is answered from: every key
// below the labels before it whose elements match the question's, position by position; at
// most Options.MaxRecords of them, the first in key order, found within a budget of nodes
// (walk.go). ErrTooBroad when it ran out of budget before it found any.
func (ix *Index) wildcardQuery(labels []string, star int) (*answerSet, error) {
	t := ix.tree
	id, depth := t.walk(t.root, labels[:star])
	if n := t.at(id); depth < star || n.value == nil && n.leaf() {
		return nil, ErrNotFound
	}
	r := t.scanBelow(id, labels[:star], labels[star:], ix.opts.MaxRecords)
	if r.cut && len(r.recs) == 0 {
		return nil, ErrTooBroad
	}
	return newAnswerSet(r.recs).setCut(r), nil
}

// finish applies what depends on the question and the clock to a cached answer set: leased
// TTLs, and leaving out records without a host unless TXT was asked. It copies only when one
// of them changes something.
func (ix *Index) finish(set *answerSet, qtype uint16, v view) []msg.Service {
	return finish(set, qtype, v, ix.leaseTTLs(ix.leases))
}

func finish(set *answerSet, qtype uint16, v view, ttls leaseTTLs) []msg.Service {
	if v == answered {
		set = set.forQuestion(qtype)
	}
	sx := set.services
	if leased := set.leased(); len(leased) > 0 {
		sx = slices.Clone(sx)
		now := ttls.opts.Now()
		for _, lr := range leased {
			sx[lr.pos].TTL = ttls.ttl(lr, now)
		}
	}
	if set.hostless && qtype != dns.TypeTXT {
		sx = withHost(sx)
	}
	return sx
}

// withHost is sx without the records that have only text.
func withHost(sx []msg.Service) []msg.Service {
	kept := make([]msg.Service, 0, len(sx))
	for _, s := range sx {
		if s.Host != "" {
			kept = append(kept, s)
		}
	}
	return kept
}

// leaseTTL is the stock plugin's TTL of a leased key: the smaller of the record's ttl and the
// lease's remaining life clamped to [min-lease-ttl, max-lease-ttl]; a lease past its known
// expiry counts as min-lease-ttl.
func (t leaseTTLs) ttl(lr leasedRecord, now time.Time) uint32 {
	var leaseTTL uint32
	if exp, ok := t.leases[lr.lease]; ok {
		// Past its known expiry the lease was not seen refreshed (etcd partitioned, or the
		// writer gone): the key is about to be deleted, so it gets the shortest life allowed,
		// never the record's full ttl.
		left := max(int64(exp.Sub(now)/time.Second), 0)
		leaseTTL = uint32(min(max(left, int64(t.opts.MinLeaseTTL)), int64(t.opts.MaxLeaseTTL))) // #nosec G115 -- clamped to uint32 bounds
	}
	switch {
	case leaseTTL == 0 && lr.ttl == 0:
		return DefaultTTL
	case leaseTTL == 0:
		return lr.ttl
	case lr.ttl == 0:
		return leaseTTL
	}
	return min(leaseTTL, lr.ttl)
}

// leaseTTLs works out the TTLs of leased records from when their leases expire.
type leaseTTLs struct {
	leases map[int64]time.Time
	opts   *Options
}

func (ix *Index) leaseTTLs(leases map[int64]time.Time) leaseTTLs {
	return leaseTTLs{leases: leases, opts: &ix.opts}
}
