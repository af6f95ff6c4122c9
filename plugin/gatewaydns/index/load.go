package index

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Loading is a Load in progress: the keys of one read, added a part at a time as etcd sends
// them, so that a million of them never sit in memory side by side with the index they become.
// The new subtree, and what follows from it (serials, digests, names whose records clash), is
// worked out off the index's lock; Finish swaps it in, and queries wait only for the swap.
// Abort drops it (the read failed). Not safe for concurrent use.
type Loading struct {
	ix     *Index
	prefix string
	base   []string // the path elements of prefix, where the subtree goes
	sub    nodeID   // in the index's tree, but not yet in its tree of nodes
	count  int
	// digests are those of prefix and of every prefix of Options.Prefixes below it, each of
	// which the load replaces too.
	digests  map[string]*Digest
	serials  map[string]int64
	checked  map[string]*entry // the keys and values of checked records (checks.go)
	rejected []rejection
	entries  []*entry // Add's, reused
	errs     []error
	elems    []string // below's, reused
	newStore bool     // the read is of a new store (NewStore)
}

// below is the path elements of key (under the prefix) below the prefix's node.
func (l *Loading) below(key string) []string {
	l.elems = l.elems[:0]
	rest := strings.TrimPrefix(key, l.ix.root)
	if rest == "" {
		return nil // as Index.elements has it
	}
	for i := 0; ; i++ {
		j := strings.IndexByte(rest, '/')
		if i >= len(l.base) {
			if j < 0 {
				return append(l.elems, rest)
			}
			l.elems = append(l.elems, rest[:j])
		}
		if j < 0 {
			return l.elems // key is the prefix's node itself
		}
		rest = rest[j+1:]
	}
}

// StartLoad begins a Load of prefix: everything under it is to be replaced by what Add is
// given, once Finish is called.
func (ix *Index) StartLoad(prefix string) *Loading {
	base := ix.elements(prefix)
	if n := len(base); n > 0 && base[n-1] == "" {
		base = base[:n-1] // "cluster/openmcp/" names the node "openmcp"
	}
	last := ""
	if len(base) > 0 {
		last = base[len(base)-1]
	}
	l := &Loading{ix: ix, prefix: prefix, base: base, sub: ix.tree.newNode(last),
		digests: map[string]*Digest{prefix: {}}, serials: map[string]int64{}}
	below := func(p string) {
		if p != prefix && strings.HasPrefix(p, prefix) {
			l.digests[p] = &Digest{}
		}
	}
	for _, p := range ix.opts.Prefixes {
		below(p)
	}
	ix.mu.RLock()
	for p := range ix.digests {
		below(p)
	}
	ix.mu.RUnlock()
	return l
}

// Load replaces everything under the key prefix (the root, or a zone's prefix below it) with
// kvs, as read by one Get at one revision: StartLoad, Add and Finish at once.
func (ix *Index) Load(prefix string, kvs []record.KV) {
	l := ix.StartLoad(prefix)
	l.Add(kvs)
	l.Finish(0)
}

// Add adds the next keys of the read; what is not under the prefix is ignored.
func (l *Loading) Add(kvs []record.KV) {
	ix := l.ix
	l.decodeAll(kvs)
	for i, kv := range kvs {
		if !strings.HasPrefix(kv.Key, l.prefix) || !strings.HasPrefix(kv.Key, ix.root) {
			continue
		}
		for p, d := range l.digests {
			if strings.HasPrefix(kv.Key, p) {
				d.Add(kv.Key, kv.Revision)
			}
		}
		noteSerial(l.serials, ix.opts.ZonePrefixes, kv.Key, kv.Revision)
		switch {
		case l.errs[i] != nil:
			l.rejected = append(l.rejected, rejection{kv, l.errs[i]})
		case ix.tree.insert(l.sub, l.below(kv.Key), l.entries[i]):
			l.count++
			fallthrough
		default:
			if _, ok := checkedOf(kv.Key, l.entries[i]); ok {
				if l.checked == nil {
					l.checked = map[string]*entry{}
				}
				l.checked[kv.Key] = l.entries[i]
			}
		}
	}
}

// decodeAll decodes the values of kvs into l.entries and l.errs on as many goroutines as there
// are CPUs: what a load of a million records spends most of its time on. A value that cannot
// be served has an error.
func (l *Loading) decodeAll(kvs []record.KV) {
	ix := l.ix
	l.entries, l.errs = resize(l.entries, len(kvs)), resize(l.errs, len(kvs))
	seen := ix.opts.Now().UnixNano() // the clock once a part: a load reads a million values
	const part = 1024
	workers := min(runtime.GOMAXPROCS(0), (len(kvs)+part-1)/part)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				start := int(next.Add(part)) - part
				if start >= len(kvs) {
					return
				}
				for i := start; i < min(start+part, len(kvs)); i++ {
					l.entries[i], l.errs[i] = nil, nil
					if strings.HasPrefix(kvs[i].Key, l.prefix) && strings.HasPrefix(kvs[i].Key, ix.root) {
						l.entries[i], l.errs[i] = decodeAt(kvs[i], seen)
					}
				}
			}
		})
	}
	wg.Wait()
}

// resize is s with length n, reusing its array where it is large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Abort drops the load.
func (l *Loading) Abort() {
	if l.sub != 0 {
		l.ix.tree.releaseAll(l.sub)
		l.sub = 0
	}
}

// Finish swaps what was added in for everything the index held under the prefix, read at the
// revision read (0: not known, the newest key's then).
func (l *Loading) Finish(read int64) {
	ix := l.ix
	t := ix.tree
	clashes := t.clashesIn(l.sub, l.base)

	ix.mu.Lock()
	ix.gen++
	for p, rev := range l.serials {
		ix.serials[p] = max(ix.serials[p], rev)
	}
	ix.loadDigestsLocked(l.prefix, l.base, l.digests)
	removed, old := t.graft(l.base, l.sub, ix.root+strings.Join(l.base, "/")+"/")
	ix.count += l.count - removed
	for key := range ix.invalid {
		if strings.HasPrefix(key, l.prefix) {
			delete(ix.invalid, key)
		}
	}
	ix.reportLocked(l.rejected)
	ix.setClashesBelowLocked(l.base, clashes)
	checked := ix.checks.dropUnder(l.prefix)
	for key, e := range l.checked {
		checked = append(checked, ix.checks.set(key, e)...)
	}
	ix.checkedChangedLocked(checked)
	if l.newStore {
		ix.newStoreLocked()
	}
	// The zones under the prefix changed without the journal, up to the revision read: the
	// read's, not the newest key's, which a delete after it may follow (the watcher replays
	// those for the serial: Replayed), so that an IXFR from before the load reads them from
	// etcd's history too (gap.go).
	for _, p := range ix.opts.ZonePrefixes {
		if strings.HasPrefix(p, l.prefix) || strings.HasPrefix(l.prefix, p) {
			ix.journal.rebase(p, max(ix.serials[p], ix.journal.newest(), read))
		}
	}
	ix.loadedPrefixes[l.prefix] = true
	all := true
	for _, p := range ix.opts.Prefixes {
		all = all && ix.loadedPrefixes[p]
	}
	ix.mu.Unlock()
	l.sub = 0
	if old != 0 {
		t.releaseAll(old) // out of the tree, which no reader can reach
	}
	if all {
		ix.loaded.Store(true)
	}
}
