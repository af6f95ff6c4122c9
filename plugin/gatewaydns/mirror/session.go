package mirror

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

// session watches from revision from (rev, rev+1 when rev itself is compacted away, or
// earlier after a load: see Run) and applies every change after rev until the watch fails, stalls, is found inconsistent, or ctx
// ends. It returns the revision the Sink reflects (the last applied event's, or a later
// progress notification's), whether etcd said anything, and why it stopped.
//
// The watch starts at rev, which the Sink already holds, rather than at rev+1: etcd (3.5.8 and
// later) answers a progress request only when every watch of the stream starts at or below
// its current revision, so a watch from rev+1 in a quiet zone would never hear one, and would
// be taken for stalled every few seconds. The events of rev itself are dropped.
func (w *Watcher) session(ctx context.Context, rev, from int64) (int64, bool, error) {
	// The session's streams are its own (the balancer may open them on another member than
	// the last session's) and end with it, whether they ever opened or not: an outage retried
	// many times leaves no stream behind.
	watches := store.NewWatches(w.Client)
	defer watches.Close()
	sctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	p := newProgress(w.progressEvery(), w.stallAfter(), time.Now())
	// A new stream must show it lives like a quiet one: its created response is due within
	// stall. The balancer may open it on the very member that was just left frozen, and
	// that must cost one stall, not a progress interval on top.
	p.asked = time.Now()
	// Watch itself waits until the client's stream goroutine takes the request, which it does
	// only once it has opened the stream: on a frozen member that is never. Bound it.
	giveUp := time.AfterFunc(p.stall, cancel)
	wch := watches.Watch(sctx, w.Prefix, clientv3.WithPrefix(), clientv3.WithRev(from),
		clientv3.WithProgressNotify(), clientv3.WithCreatedNotify())
	if !giveUp.Stop() && ctx.Err() == nil {
		return rev, false, errStalled
	}

	tick := time.NewTicker(p.every / 10)
	defer tick.Stop()
	heard := false
	for {
		select {
		case <-ctx.Done():
			return rev, heard, ctx.Err()
		case now := <-tick.C:
			w.releaseHeld(rev, now)
			switch p.due(now) {
			case stalled:
				return rev, heard, errStalled
			case ask:
				// On the session's own stream; bounded, since a stream stuck in flow
				// control may not take the request.
				rctx, rcancel := context.WithTimeout(sctx, p.stall)
				if err := watches.RequestProgress(rctx); err != nil && ctx.Err() == nil {
					w.Log.Debugf("Asking etcd for progress on %s: %v", w.Prefix, err)
				}
				rcancel()
			}
		case reply := <-w.snapshots:
			if len(w.held) > 0 {
				reply <- snapshot{} // the Sink holds keys etcd deleted: compare next round
				continue
			}
			reply <- w.snapshot(rev) // buffered: never blocks the session
		case gen := <-w.inconsistent:
			if gen == w.generation {
				return rev, heard, errInconsistent
			}
		case resp, ok := <-wch:
			if !ok {
				return rev, heard, errors.New("watch channel closed")
			}
			if resp.CompactRevision != 0 {
				return rev, heard, compactedError{at: resp.CompactRevision}
			}
			if err := resp.Err(); err != nil {
				return rev, heard, err
			}
			heard = true
			p.heard(time.Now())
			w.answered()
			if !resp.Created {
				// Freshness moves with data and progress only: a new watch may be far behind.
				w.Observer.Heard()
			}
			events := resp.Events
			replayed := int64(0)
			for len(events) > 0 && events[0].Kv.ModRevision <= rev {
				// Held already: the watch starts at rev, or replays what the load could not
				// show (the deletes after its newest key), which counts for the serial only.
				replayed = events[0].Kv.ModRevision
				events = events[1:]
			}
			if replayed > 0 {
				w.Sink.Replayed(w.Prefix, replayed)
			}
			switch {
			case len(events) > 0:
				// The last event's revision, not the header's: while catching up, a batch's
				// header carries the store's current revision, past events not yet sent. All
				// events of one revision come in one response (no WithFragment).
				rev = w.apply(events)
			case resp.IsProgressNotify() && resp.Header.Revision > rev:
				// Safe since etcd 3.5.8, which sends progress only to a synced watcher: every
				// event up to the header's revision has been sent. The server here is 3.7.3.
				rev = resp.Header.Revision
			}
		}
	}
}

// apply hands one response's events to the Sink and returns the last one's revision (a
// delete's Kv.ModRevision is the delete's revision).
func (w *Watcher) apply(events []*clientv3.Event) int64 {
	last := events[len(events)-1].Kv.ModRevision
	changes := make([]record.Change, len(events))
	var puts, deletes int
	var leases []int64
	for i, ev := range events {
		kv := ev.Kv
		changes[i] = record.Change{
			KV:      record.KV{Key: string(kv.Key), Value: kv.Value, Lease: kv.Lease, Revision: kv.ModRevision, Created: kv.CreateRevision},
			Deleted: ev.Type == clientv3.EventTypeDelete,
		}
		if changes[i].Deleted {
			deletes++
		} else {
			puts++
			if kv.Lease != 0 {
				leases = append(leases, kv.Lease)
			}
		}
	}
	if w.Grace > 0 {
		changes = w.holdExpired(changes, time.Now())
		deletes -= len(events) - len(changes)
	}
	if len(changes) > 0 {
		w.Sink.Apply(changes)
	}
	w.Observer.Applied(puts, deletes)
	w.noteLeases(leases)
	return last
}

// compactedError is a watch refused because its start revision was compacted away; at is the
// oldest revision etcd still has.
type compactedError struct{ at int64 }

func (e compactedError) Error() string {
	return fmt.Sprintf("%v: the oldest revision left is %d", rpctypes.ErrCompacted, e.at)
}

func (e compactedError) Is(target error) bool { return target == rpctypes.ErrCompacted }
