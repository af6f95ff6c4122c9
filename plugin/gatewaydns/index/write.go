// The write half of the index: loads, watch changes and leases, applied under the write lock.

package index

import (
	"strings"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Apply makes the changes of one watch response, in order. It takes the write lock for at most
// applySlice changes at a time, more only to finish a revision: queries are answered between
// two slices, and never see part of one transaction.
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
	for start := 0; start < len(changes); {
		end := min(start+applySlice, len(changes))
		for end < len(changes) && changes[end].Revision == changes[end-1].Revision {
			end++
		}
		ix.mu.Lock()
		ix.applyLocked(changes[start:end], entries[start:end], skipped)
		if end == len(changes) {
			// Only values still in place at the end of the batch are skipped ones: a later
			// put or delete of the same key in this batch replaced them.
			kept := rejected[:0]
			for _, r := range rejected {
				if rev, ok := skipped[r.kv.Key]; ok && rev == r.kv.Revision {
					kept = append(kept, r)
				}
			}
			ix.reportLocked(kept)
		}
		ix.mu.Unlock()
		start = end
	}
}

// applySlice is the most changes Apply makes under one lock, unless a revision has more: some
// 200 us of queries waiting.
const applySlice = 128

// applyLocked makes changes, whose decoded values are entries (nil for deletes and values it
// cannot serve), and notes the keys it skips as invalid in skipped.
func (ix *Index) applyLocked(changes []record.Change, entries []*entry, skipped map[string]int64) {
	ix.gen++
	// The names whose records changed, to look again at whether they mix a CNAME with other
	// data once the slice is in.
	names := make(map[string][]string, len(changes))
	var checked []string // the names of checked records, before or after the changes
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
		ix.journal.note(c.Revision, c.Key, ix.tree.value(elems))
		checked = append(checked, ix.checks.set(c.Key, entries[i])...)
		delete(skipped, c.Key)
		switch {
		case entries[i] != nil:
			if ix.tree.put(ix.tree.root, elems, entries[i], c.Key) {
				ix.count++
			}
			delete(ix.invalid, c.Key)
		default:
			// A delete, or a put of a value we cannot serve: either way the key no longer
			// answers, as the stock plugin would stop answering it correctly too.
			if ix.tree.remove(elems, c.Key) {
				ix.count--
			}
			if !c.Deleted {
				skipped[c.Key] = c.Revision // ix.invalid learns it only after the batch
			}
			if c.Deleted {
				delete(ix.invalid, c.Key)
			}
		}
	}
	for path, name := range names {
		ix.checkClashLocked(name, path)
	}
	ix.checkedChangedLocked(checked)
}

// checkedChangedLocked follows a write of checked records of names (keys): their zones'
// serials take an offset if they have none (steerserial.go), and whether they fail open is
// looked at again.
func (ix *Index) checkedChangedLocked(names []string) {
	if len(names) == 0 {
		return
	}
	var still []string
	for _, n := range names {
		if ix.checks.names[n] > 0 {
			still = append(still, n)
		}
	}
	ix.moveSteerSerialsLocked(still, ix.view(), false)
	ix.checkFailOpenLocked(names)
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
	return decodeAt(kv, ix.opts.Now().UnixNano())
}

// decodeAt is the entry of kv, learned at seen (Unix nanoseconds).
func decodeAt(kv record.KV, seen int64) (*entry, error) {
	v, err := record.Decode(kv.Key, kv.Value)
	if err != nil {
		return nil, err
	}
	return newEntry(kv, &v, seen), nil
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
