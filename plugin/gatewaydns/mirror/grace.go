package mirror

import (
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Graced is the part of a Sink that tells a lease's expiry from a delete (index.Index is one):
// the lease of a key when it has run out, 0 otherwise.
type Graced interface {
	ExpiredLease(key string, now time.Time) int64
}

// DefaultGrace is the grace of a key deleted by its lease's expiry: long enough for a writer
// that finds its lease gone to be elected again and republish (about a second), short enough
// that a dead cluster's names go soon after its lease.
const DefaultGrace = 5 * time.Second

// held is a key deleted by its lease's expiry, still answered until the grace ends.
type held struct {
	lease int64
	until time.Time
}

// A lease that expires while its owner is alive (etcd frozen or its disk stalled for longer
// than the lease, then revoking every lease that ran out at once on resume) deletes all of
// the owner's keys in one revision, and the owner republishes them a second later. Answering
// NXDOMAIN in between blanks a cluster for nothing. So a key deleted by its lease's expiry is
// held, answered from memory with the shortest TTL allowed (its lease counts as run out), for
// Grace: a put of the same key ends the hold (the owner republished), the end of the grace
// makes the delete (the owner is gone: its names go after lease plus grace). Deletes an owner
// makes, with its lease alive, are applied at once.

// holdExpired takes out of changes the deletes of keys whose lease ran out, holding them, and
// ends the hold of every key put or deleted again. It returns the changes to apply now.
func (w *Watcher) holdExpired(changes []record.Change, now time.Time) []record.Change {
	g, ok := w.Sink.(Graced)
	if !ok {
		return changes
	}
	kept := changes[:0]
	for _, c := range changes {
		w.unhold(c.Key)
		lease := int64(0)
		if c.Deleted {
			lease = g.ExpiredLease(c.Key, now)
		}
		if lease == 0 {
			kept = append(kept, c)
			continue
		}
		if w.held == nil {
			w.held = map[string]held{}
		}
		w.held[c.Key] = held{lease: lease, until: now.Add(w.Grace)}
		if w.countHold(lease, 1) == 1 {
			// Until the hold ends the records answer with the shortest TTL allowed.
			w.Sink.SetLeaseExpiry(lease, now)
		}
	}
	return kept
}

// unhold ends key's hold, if it has one; the last hold of a lease lets the lease go.
func (w *Watcher) unhold(key string) {
	h, ok := w.held[key]
	if !ok {
		return
	}
	delete(w.held, key)
	if w.countHold(h.lease, -1) == 0 {
		w.Sink.ForgetLease(h.lease)
	}
}

// releaseHeld applies the deletes whose grace has passed, at revision rev (the one the Sink
// reflects: the delete takes effect now, after every change applied since it happened). It
// returns how many it applied.
func (w *Watcher) releaseHeld(rev int64, now time.Time) int {
	var due []record.Change
	for key, h := range w.held {
		if !now.Before(h.until) {
			due = append(due, record.Change{KV: record.KV{Key: key, Revision: rev}, Deleted: true})
		}
	}
	if len(due) == 0 {
		return 0
	}
	for _, c := range due {
		w.unhold(c.Key)
	}
	w.Log.Infof("%d keys of %s whose lease ran out were not published again within %s: deleting them", len(due), w.Prefix, w.Grace)
	w.Sink.Apply(due)
	w.Observer.Applied(0, len(due))
	return len(due)
}

// dropHeld forgets every hold: a full load replaces what the Sink holds with etcd's keys.
func (w *Watcher) dropHeld() {
	for key := range w.held {
		w.unhold(key)
	}
}

// countHold adds delta to the number of held keys of lease and returns it. The count is read by
// trackLeases too (leaseHeld): a lease whose keys are held, found gone from etcd, keeps its
// run-out expiry in the Sink (the held records' TTL) instead of being forgotten.
func (w *Watcher) countHold(lease int64, delta int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.heldPerLease == nil {
		w.heldPerLease = map[int64]int{}
	}
	n := w.heldPerLease[lease] + delta
	if n <= 0 {
		delete(w.heldPerLease, lease)
		return 0
	}
	w.heldPerLease[lease] = n
	return n
}

func (w *Watcher) leaseHeld(lease int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.heldPerLease[lease] > 0
}
