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
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sctx := clientv3.WithRequireLeader(rctx)
	gen, newStore := w.Members.Lineage().Generation()
	if gen != w.storeGen {
		return rev, false, errNewStore
	}
	s := &session{w: w, watches: watches, ctx: sctx, reads: rctx, rev: rev,
		p: newProgress(w.progressEvery(), w.stallAfter(), time.Now())}
	wch, ok := s.open(cancel, from)
	if !ok && ctx.Err() == nil {
		return rev, false, errStalled
	}
	// The client resumes a watch on a new connection by itself, silently: after a restore
	// from a snapshot, at a revision the restored store has not reached, where etcd answers
	// no progress request. Whether etcd went back is asked at once instead of after a stall.
	back := store.Reconnected(sctx, w.Client)

	tick := time.NewTicker(s.p.every / 10)
	defer tick.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case now := <-tick.C:
			err = s.tick(ctx, now)
		case reply := <-w.snapshots:
			s.snapshot(reply)
		case gen := <-w.inconsistent:
			if gen == w.generation {
				err = errInconsistent
			}
		case <-newStore:
			err = errNewStore
		case <-back:
			back = store.Reconnected(sctx, w.Client)
			if s.behind() {
				err = errNewStore
			}
		case resp, open := <-wch:
			if !open {
				err = errors.New("watch channel closed")
			} else {
				err = s.receive(resp)
			}
		}
		if err != nil {
			return s.rev, s.heard, err
		}
	}
}

// session is one watch stream's life: the revision the Sink reflects, and whether etcd said
// anything.
type session struct {
	w       *Watcher
	watches *store.Watches
	ctx     context.Context // the stream's: it requires a leader and ends with the session
	reads   context.Context // the session's reads': they wait for a leader (behind)
	p       *progress
	rev     int64
	heard   bool
}

// open starts the watch from revision from; ok is false when the client did not take it in
// time.
func (s *session) open(cancel context.CancelFunc, from int64) (wch clientv3.WatchChan, ok bool) {
	// A new stream must show it lives like a quiet one: its created response is due within
	// stall. The balancer may open it on the very member that was just left frozen, and
	// that must cost one stall, not a progress interval on top.
	s.p.asked = time.Now()
	// Watch itself waits until the client's stream goroutine takes the request, which it does
	// only once it has opened the stream: on a frozen member that is never. Bound it.
	giveUp := time.AfterFunc(s.p.stall, cancel)
	wch = s.watches.Watch(s.ctx, s.w.Prefix, clientv3.WithPrefix(), clientv3.WithRev(from),
		clientv3.WithProgressNotify(), clientv3.WithCreatedNotify())
	return wch, giveUp.Stop()
}

// tick releases the held keys whose grace ended, and asks for progress when the stream has
// been quiet, or gives it up as stalled.
func (s *session) tick(ctx context.Context, now time.Time) error {
	s.w.releaseHeld(s.rev, now)
	switch s.p.due(now) {
	case stalled:
		return errStalled
	case ask:
		// On the session's own stream; bounded, since a stream stuck in flow control may not
		// take the request.
		rctx, rcancel := context.WithTimeout(s.ctx, s.p.stall)
		defer rcancel()
		if err := s.watches.RequestProgress(rctx); err != nil && ctx.Err() == nil {
			s.w.Log.Debugf("Asking etcd for progress on %s: %v", s.w.Prefix, err)
		}
	}
	return nil
}

// snapshot answers the consistency check with what the Sink holds at the session's revision.
func (s *session) snapshot(reply chan snapshot) {
	if len(s.w.held) > 0 {
		reply <- snapshot{} // the Sink holds keys etcd deleted: compare next round
		return
	}
	reply <- s.w.snapshot(s.rev) // buffered: never blocks the session
}

// receive takes one watch response: events to apply, a progress notification, or the end.
func (s *session) receive(resp clientv3.WatchResponse) error {
	if resp.CompactRevision != 0 {
		return compactedError{at: resp.CompactRevision}
	}
	if err := resp.Err(); err != nil {
		return err
	}
	s.heard = true
	s.p.heard(time.Now())
	s.w.answered()
	if resp.Created && resp.Header.Revision < s.rev && s.behind() {
		return errNewStore
	}
	if !resp.Created {
		// Freshness moves with data and progress only: a new watch may be far behind.
		s.w.Observer.Heard()
	}
	events := resp.Events
	replayed := int64(0)
	for len(events) > 0 && events[0].Kv.ModRevision <= s.rev {
		// Held already: the watch starts at rev, or replays what the load could not show
		// (the deletes after its newest key), which counts for the serial only.
		replayed = events[0].Kv.ModRevision
		events = events[1:]
	}
	if replayed > 0 {
		s.w.Sink.Replayed(s.w.Prefix, replayed)
	}
	switch {
	case len(events) > 0:
		// The last event's revision, not the header's: while catching up, a batch's header
		// carries the store's current revision, past events not yet sent. All events of one
		// revision come in one response (no WithFragment).
		s.rev = s.w.apply(events)
	case resp.IsProgressNotify() && resp.Header.Revision > s.rev:
		// Safe since etcd 3.5.8, which sends progress only to a synced watcher: every event
		// up to the header's revision has been sent. The server here is 3.7.3.
		s.rev = resp.Header.Revision
	}
	return nil
}

// behindTimeout bounds the read that tells whether etcd is behind the Sink.
const behindTimeout = 2 * time.Second

// behind tells whether etcd is at a revision before the one the Sink holds, when a new stream
// said it is (its created response carries the member's revision) or the connection came back.
// After a restore from a snapshot etcd numbers its revisions anew from the snapshot's: a watch
// from the Sink's revision would wait for revisions that are others, and never be answered a
// progress request. A follower that lags says so as well, so a linearizable read, at or after
// every revision the Sink was given, decides; it waits for a leader (a cluster that just came
// back elects one), within behindTimeout.
func (s *session) behind() bool {
	ctx, cancel := context.WithTimeout(s.reads, behindTimeout)
	defer cancel()
	resp, err := s.w.Client.Get(ctx, s.w.Prefix, clientv3.WithCountOnly())
	if err != nil {
		return false // the stall and the next session find out
	}
	if resp.Header.Revision < s.rev {
		s.w.Log.Warningf("etcd is at revision %d, before revision %d of %s that the index holds: its history went back (restored from a snapshot?)", resp.Header.Revision, s.rev, s.w.Prefix)
		return true
	}
	return false
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
