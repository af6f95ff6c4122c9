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
	defer w.stepDown(term)
	go w.watchKey(ctx, watches, term)

	// The full resync at the start covers everything enqueued so far.
	w.mu.Lock()
	clear(w.pending)
	w.mu.Unlock()

	l := newTermWork(w, term, lease)
	defer l.resync.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return nil
		case <-term.Done():
			return errors.New("election session lost")
		case <-deposed:
			return ErrNotLeader
		case <-leaseLost:
			return errors.New("records' lease lost")
		case <-l.syncedC:
			l.sourcesSynced()
		case <-l.resync.C:
			err = l.resyncAll(ctx)
		case <-l.up:
			l.reconnected()
		case <-l.retry:
			l.retry = nil
			w.Enqueue()
		case <-w.wake:
			err = l.reconcilePending(ctx)
		}
		if errors.Is(err, ErrNotLeader) {
			return err
		}
	}
}

// stepDown ends a term as leader.
func (w *Writer) stepDown(term *Term) {
	w.depose(term)
	w.forgetLost()
	w.obs.Leading(false)
	// A standby counts no problems: the leader does. What was reported stays remembered, so
	// that leading again does not report it twice.
	w.tellNoProblems()
}

// termWork is the work of one term as leader besides its end: when the next full resync is
// due, and the retries of what failed while etcd could not be reached.
type termWork struct {
	w     *Writer
	term  *Term
	lease clientv3.LeaseID

	// syncedC is closed when the sources have synced. A resync made before held its deletes
	// back: when they sync, resync again at once, unless one has been made since.
	syncedC        <-chan struct{}
	resyncedSynced bool

	delay        *backoff.Backoff
	resync       *time.Timer
	resyncFailed bool
	retry        <-chan time.Time // the pending names' retry, nil when none waits
	// up is closed when etcd's connection comes back while a resync or a retry waits out its
	// delay: the pending work is done then, not after the delay (store.Pause's rule).
	up <-chan struct{}
}

func newTermWork(w *Writer, term *Term, lease clientv3.LeaseID) *termWork {
	return &termWork{w: w, term: term, lease: lease, syncedC: w.cfg.Desired.SyncedC(),
		delay: newRetryDelay(), resync: time.NewTimer(0)}
}

func (l *termWork) sourcesSynced() {
	l.syncedC = nil
	if !l.resyncedSynced {
		l.resync.Reset(0)
	}
}

// resyncAll makes a full resync and sets when the next is due: after ResyncInterval, sooner
// after a take-over from external-dns, after a back-off when it failed.
func (l *termWork) resyncAll(ctx context.Context) error {
	synced := l.w.cfg.Desired.Synced()
	res, err := l.w.resync(ctx, l.term, l.lease)
	if errors.Is(err, ErrNotLeader) {
		return err
	}
	if err != nil && ctx.Err() == nil {
		l.resync.Reset(l.delay.Next())
		l.resyncFailed = true
		l.awaitReconnect(ctx)
		return nil
	}
	l.resyncFailed = false
	l.resyncedSynced = l.resyncedSynced || synced
	l.delay.Reset()
	next := l.w.cfg.ResyncInterval
	if res.Adopted > 0 {
		next = min(next, adoptionRecheck)
	}
	l.resync.Reset(next)
	return nil
}

// reconcilePending reconciles the names enqueued; when etcd cannot be reached they are tried
// again after a back-off.
func (l *termWork) reconcilePending(ctx context.Context) error {
	names, since := l.w.takePending()
	if len(names) == 0 {
		return nil
	}
	_, err := l.w.reconcile(ctx, l.term, l.lease, names, since)
	if errors.Is(err, ErrNotLeader) {
		return err
	}
	if err != nil && ctx.Err() == nil {
		// etcd unreachable or the like: try these names again later.
		l.w.requeue(names, since)
		l.retry = time.After(l.delay.Next())
		l.awaitReconnect(ctx)
		return nil
	}
	l.delay.Reset()
	return nil
}

func (l *termWork) awaitReconnect(ctx context.Context) {
	if l.up == nil {
		l.up = store.Reconnected(ctx, l.w.client)
	}
}

// reconnected does at once what waits out a delay.
func (l *termWork) reconnected() {
	l.up = nil
	if l.resyncFailed {
		l.resync.Reset(0)
	}
	if l.retry != nil {
		l.retry = nil
		l.w.Enqueue()
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
