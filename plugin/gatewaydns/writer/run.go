package writer

import (
	"context"
	"errors"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/backoff"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

// Run campaigns for the owner's leadership and, while it leads, reconciles: a full resync at
// the start of each term, when the sources have synced, and every ResyncInterval, and the
// enqueued names as they come. It returns when ctx ends, within about a second in every state
// (etcd refusing or not answering included), after a best-effort resign so that a standby
// replica takes over at once. Run's own failures are retried; they reach the Observer, never
// the caller.
func (w *Writer) Run(ctx context.Context) error {
	// Every series exists from the first second, also on a standby that never leads.
	w.obs.Leading(false)
	delay := newRetryDelay()
	for ctx.Err() == nil {
		term, err := w.el.Campaign(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			w.reached(err)
			w.obs.Failed(w.el.Prefix(), err)
			store.Pause(ctx, w.client, delay, w.cfg.Members)
			continue
		}
		w.reached(nil)
		delay.Reset()
		err = w.lead(ctx, term)
		_ = term.Resign(ctx) // bounded by resignTimeout, whether ctx ended or not
		if err != nil && ctx.Err() == nil {
			w.obs.Failed(w.el.Prefix(), err)
			store.Pause(ctx, w.client, delay, w.cfg.Members)
		}
	}
	return nil
}

// lead does the work of one term; it returns when the term, the records' lease or ctx ends.
func (w *Writer) lead(ctx context.Context, term *Term) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var lease clientv3.LeaseID
	var leaseLost <-chan struct{}
	if w.cfg.Lease > 0 && !w.cfg.DryRun {
		var err error
		lease, leaseLost, err = w.takeLease(ctx)
		if err != nil {
			return err
		}
	}
	// The term's watches (its key, the lost names) end with it, opened or not.
	watches := store.NewWatches(w.client)
	defer watches.Close()
	deposed := w.setTerm(term, lease, watches)
	w.obs.Leading(true)
	defer func() {
		w.depose(term)
		w.forgetLost()
		w.obs.Leading(false)
		// A standby counts no problems: the leader does. What was reported stays remembered,
		// so that leading again does not report it twice.
		w.tellNoProblems()
	}()
	go w.watchKey(ctx, watches, term)

	// The full resync at the start covers everything enqueued so far.
	w.mu.Lock()
	clear(w.pending)
	w.mu.Unlock()

	// A resync made before the sources synced held its deletes back: when they sync, resync
	// again at once.
	syncedC := w.cfg.Desired.SyncedC()
	resyncedSynced := false

	delay := newRetryDelay()
	resync := time.NewTimer(0)
	defer resync.Stop()
	var retry <-chan time.Time
	// up is closed when etcd's connection comes back while a resync or a retry waits out its
	// delay: the pending work is done then, not after the delay (store.Pause's rule).
	var up <-chan struct{}
	resyncFailed := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-term.Done():
			return errors.New("election session lost")
		case <-deposed:
			return ErrNotLeader
		case <-leaseLost:
			return errors.New("records' lease lost")
		case <-syncedC:
			syncedC = nil
			if !resyncedSynced {
				resync.Reset(0)
			}
		case <-resync.C:
			synced := w.cfg.Desired.Synced()
			res, err := w.resync(ctx, term, lease)
			if errors.Is(err, ErrNotLeader) {
				return err
			}
			if err != nil && ctx.Err() == nil {
				resync.Reset(delay.Next())
				resyncFailed = true
				if up == nil {
					up = store.Reconnected(ctx, w.client)
				}
				continue
			}
			resyncFailed = false
			resyncedSynced = resyncedSynced || synced
			delay.Reset()
			next := w.cfg.ResyncInterval
			if res.Adopted > 0 {
				next = min(next, adoptionRecheck)
			}
			resync.Reset(next)
		case <-up:
			up = nil
			if resyncFailed {
				resync.Reset(0)
			}
			if retry != nil {
				retry = nil
				w.Enqueue()
			}
		case <-retry:
			retry = nil
			w.Enqueue()
		case <-w.wake:
			names, since := w.takePending()
			if len(names) == 0 {
				continue
			}
			_, err := w.reconcile(ctx, term, lease, names, since)
			if errors.Is(err, ErrNotLeader) {
				return err
			}
			if err != nil && ctx.Err() == nil {
				// etcd unreachable or the like: try these names again later.
				w.requeue(names, since)
				retry = time.After(delay.Next())
				if up == nil {
					up = store.Reconnected(ctx, w.client)
				}
				continue
			}
			delay.Reset()
		}
	}
}

// adoptionRecheck is how soon a full resync that took keys over from external-dns is followed
// by another. An external-dns still running may have been inside a sync loop when its keys
// were taken: what the loop writes afterwards (a key and its registry record, planned before
// the takeover) is taken over then, not at the next periodic resync. Once a resync takes
// nothing over, the period is ResyncInterval again.
const adoptionRecheck = 10 * time.Second

// watchKey deposes term as soon as its election key is deleted (resigned by hand, its
// session's lease revoked or expired), without waiting for the session's next keep-alive.
func (w *Writer) watchKey(ctx context.Context, watches *store.Watches, term *Term) {
	for ev := range watches.Watch(ctx, term.Key, clientv3.WithRev(term.Rev)) {
		for _, e := range ev.Events {
			if e.Type == clientv3.EventTypeDelete {
				w.depose(term)
				return
			}
		}
		if ev.Err() != nil {
			return // compacted or canceled: the session and the fence still guard the term
		}
	}
}

// newRetryDelay is the writer's wait after a failed campaign, term or write: short at first,
// so that a passing fault costs little, and at most 30s, so that a long outage is not hammered.
func newRetryDelay() *backoff.Backoff { return backoff.New(250*time.Millisecond, 30*time.Second) }
