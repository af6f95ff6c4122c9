// The write half of the index: loads, watch changes and leases, applied under the write lock.

package index

import (
	"strings"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Load replaces everything under the key prefix (the root, or a zone's prefix below it) with
// kvs, as read by one Get at one revision. The new subtree is built before the lock is taken,
// so queries keep being answered from the old one meanwhile.
func (ix *Index) Load(prefix string, kvs []record.KV) {
	base := ix.elements(prefix)
	if n := len(base); n > 0 && base[n-1] == "" {
		base = base[:n-1] // "cluster/openmcp/" names the node "openmcp"
	}
	sub := &node{}
	count := 0
	var rejected []rejection
	held := make([]keyRev, 0, len(kvs))
	for _, kv := range kvs {
		if !strings.HasPrefix(kv.Key, prefix) || !strings.HasPrefix(kv.Key, ix.root) {
			continue
		}
		held = append(held, keyRev{kv.Key, kv.Revision})
		e, err := ix.decode(kv)
		if err != nil {
			rejected = append(rejected, rejection{kv, err})
			continue
		}
		if sub.put(ix.elements(kv.Key)[len(base):], e) {
			count++
		}
	}
	ix.mu.Lock()
	ix.gen++
	for _, kr := range held {
		ix.noteChangeLocked(kr.key, kr.rev)
	}
	ix.loadDigestsLocked(prefix, base, held)
	ix.count += count - ix.tree.graft(base, sub)
	for key := range ix.invalid {
		if strings.HasPrefix(key, prefix) {
			delete(ix.invalid, key)
		}
	}
	ix.reportLocked(rejected)
	ix.checkClashesBelowLocked(base)
	ix.loadedPrefixes[prefix] = true
	all := true
	for _, p := range ix.opts.Prefixes {
		all = all && ix.loadedPrefixes[p]
	}
	ix.mu.Unlock()
	if all {
		ix.loaded.Store(true)
	}
}

// Apply makes the changes of one watch response, in order, under one lock.
func (ix *Index) Apply(changes []record.Change) {
	entries := make([]*entry, len(changes))
	var rejected []rejection
	for i, c := range changes {
		if c.Deleted || !strings.HasPrefix(c.Key, ix.root) {
			continue
		}
		e, err := ix.decode(c.KV)
		if err != nil {
			rejected = append(rejected, rejection{c.KV, err})
			continue
		}
		entries[i] = e
	}
	// skipped holds the revision of keys put with an invalid value earlier in this batch.
	skipped := map[string]int64{}
	// The names whose records changed, to look again at whether they mix a CNAME with other
	// data once the whole batch is in.
	names := make(map[string][]string, len(changes))
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.gen++
	for i, c := range changes {
		if !strings.HasPrefix(c.Key, ix.root) {
			continue
		}
		elems := ix.elements(c.Key)
		if len(elems) > 0 {
			name := elems[:len(elems)-1]
			names[strings.Join(name, "/")] = name
		}
		newRev := c.Revision
		if c.Deleted {
			newRev = 0
		}
		oldRev, ok := skipped[c.Key]
		if !ok {
			oldRev = ix.revisionLocked(c.Key, elems)
		}
		ix.applyDigestLocked(c.Key, oldRev, newRev)
		ix.noteChangeLocked(c.Key, c.Revision)
		delete(skipped, c.Key)
		switch {
		case entries[i] != nil:
			if ix.tree.put(elems, entries[i]) {
				ix.count++
			}
			delete(ix.invalid, c.Key)
		default:
			// A delete, or a put of a value we cannot serve: either way the key no longer
			// answers, as the stock plugin would stop answering it correctly too.
			if ix.tree.remove(elems) {
				ix.count--
			}
			if !c.Deleted {
				skipped[c.Key] = c.Revision // ix.invalid learns it only after the loop
			}
			if c.Deleted {
				delete(ix.invalid, c.Key)
			}
		}
	}
	for path, name := range names {
		ix.checkClashLocked(name, path)
	}
	// Only values still in place at the end of the batch are skipped ones: a later put or
	// delete of the same key in this batch replaced them.
	kept := rejected[:0]
	for _, r := range rejected {
		if rev, ok := skipped[r.kv.Key]; ok && rev == r.kv.Revision {
			kept = append(kept, r)
		}
	}
	ix.reportLocked(kept)
}

// SetLeaseExpiry records when a lease runs out; the store refreshes it from etcd.
func (ix *Index) SetLeaseExpiry(lease int64, at time.Time) {
	ix.mu.Lock()
	ix.leases[lease] = at
	ix.mu.Unlock()
}

// ForgetLease drops a lease that etcd no longer knows.
func (ix *Index) ForgetLease(lease int64) {
	ix.mu.Lock()
	delete(ix.leases, lease)
	ix.mu.Unlock()
}

// invalidValue is a value the index skips: kept to report it once, and for its revision, which
// the digest counts.
type invalidValue struct {
	value    string
	revision int64
}

type rejection struct {
	kv  record.KV
	err error
}

// reportLocked tells Options.Invalid of each rejected value once per key and value, so that
// a periodic relist or a retrying writer does not flood the log.
func (ix *Index) reportLocked(rejected []rejection) {
	for _, r := range rejected {
		prev, seen := ix.invalid[r.kv.Key]
		ix.invalid[r.kv.Key] = invalidValue{value: string(r.kv.Value), revision: r.kv.Revision}
		if seen && prev.value == string(r.kv.Value) {
			continue
		}
		if ix.opts.Invalid != nil {
			ix.opts.Invalid(r.kv.Key, r.err)
		}
	}
}

func (ix *Index) decode(kv record.KV) (*entry, error) {
	v, err := record.Decode(kv.Key, kv.Value)
	if err != nil {
		return nil, err
	}
	e := &entry{svc: v.Service, ttl: v.TTL, lease: kv.Lease, created: kv.Created,
		origin: origin{owner: v.Owner, sources: v.Sources, revision: kv.Revision, seen: ix.opts.Now().UnixNano()}}
	if e.svc.TTL == 0 {
		e.svc.TTL = DefaultTTL
	}
	if e.svc.Priority == 0 {
		e.svc.Priority = defaultPriority
	}
	e.setAddress()
	return e, nil
}

// elements splits a key below the root into its path elements, literally: a key with an
// empty element ("a//b") keeps it, as an etcd prefix read would.
func (ix *Index) elements(key string) []string {
	rest := strings.TrimPrefix(key, ix.root)
	if rest == "" {
		return nil
	}
	return strings.Split(rest, "/")
}
