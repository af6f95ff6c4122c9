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
		// The term lives in cctx (its session does): cancelled when the term is over, or while
		// campaigning when etcd turns out a new store.
		cctx, cancel := context.WithCancel(ctx)
		renewed := w.cancelOnNewStore(cctx, cancel)
		term, err := w.el.Campaign(cctx)
		if renewed() {
			cancel()
			if term != nil {
				_ = term.Resign(ctx)
			}
			continue // at once, in the new store
		}
		if err != nil {
			cancel()
			if ctx.Err() != nil {
				break
			}
			w.reached(err)
			w.refused(err)
			w.obs.Failed(w.el.Prefix(), err)
			w.pause(ctx, delay, err)
			continue
		}
		w.reached(nil)
		delay.Reset()
		err = w.lead(cctx, term)
		_ = term.Resign(ctx) // bounded by resignTimeout, whether ctx ended or not
		cancel()
		if err != nil && ctx.Err() == nil {
			w.refused(err)
			w.obs.Failed(w.el.Prefix(), err)
			w.pause(ctx, delay, err)
		}
	}
	return nil
}

// pause waits after a failed campaign or term: store.Pause, cut short when etcd answers again;
// or, when etcd refused a write (a full database: a campaign grants a lease and puts a key),
// until a probe finds that it takes writes again.
func (w *Writer) pause(ctx context.Context, delay *backoff.Backoff, err error) {
	cause, refused := refusedAll(err)
	if !refused {
		store.Pause(ctx, w.client, delay, w.cfg.Members)
		return
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	delay.Wait(pctx, w.whenAccepted(pctx, cause, nil))
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

	// The full resync at the start covers everything enqueued so far.
	w.mu.Lock()
	clear(w.pending)
	w.mu.Unlock()

	l := newTermWork(ctx, w, term, lease)
	defer l.resync.Stop()
	go w.watchKey(ctx, watches, term, l.keyCompacted)
	for {
		over, err := l.next(ctx, deposed, leaseLost)
		if over || errors.Is(err, ErrNotLeader) {
			return err
		}
	}
}

// next waits for the term's next event and does what it calls for; over tells that the term
// ended (err says why, nil when ctx ended).
func (l *termWork) next(ctx context.Context, deposed, leaseLost <-chan struct{}) (over bool, err error) {
	w := l.w
	select {
	case <-ctx.Done():
		return true, nil
	case <-l.term.Done():
		return true, errors.New("election session lost")
	case <-deposed:
		return true, ErrNotLeader
	case <-leaseLost:
		return true, errors.New("records' lease lost")
	case <-l.syncedC:
		l.sourcesSynced()
	case <-l.resync.C:
		err = l.resyncAll(ctx)
	case <-l.up:
		l.up = nil
		l.retryNow()
	case <-l.accepted:
		l.accepted = nil
		l.retryNow()
	case <-l.retry:
		l.retry = nil
		w.Enqueue()
	case <-w.wake:
		err = l.reconcilePending(ctx)
	case <-l.back:
		l.back = store.Reconnected(ctx, w.client)
		err = l.checkTerm(ctx)
	case <-l.newStore:
		err = l.storeChanged(ctx)
	case <-l.keyCompacted:
		// History the key's watch needed is gone (a restore with --mark-compacted among the
		// causes): what else happened in it is not known. Plan everything again.
		l.resync.Reset(0)
	}
	return false, err
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
	// accepted is closed when etcd takes writes again after refusing them (whenAccepted) while
	// a resync or a retry waits: the same rule for an etcd that answers and says no.
	accepted <-chan struct{}

	// back is closed at every return of the connection, newStore when the client's Lineage
	// finds etcd is a new store (restored from a snapshot, another cluster), keyCompacted when
	// the term key's watch finds the history it needed compacted.
	back         <-chan struct{}
	newStore     <-chan struct{}
	keyCompacted chan struct{}
}

func newTermWork(ctx context.Context, w *Writer, term *Term, lease clientv3.LeaseID) *termWork {
	_, newStore := w.cfg.Members.Lineage().Generation()
	return &termWork{w: w, term: term, lease: lease, syncedC: w.cfg.Desired.SyncedC(),
		delay: newRetryDelay(), resync: time.NewTimer(0),
		back: store.Reconnected(ctx, w.client), newStore: newStore, keyCompacted: make(chan struct{}, 1)}
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
		l.awaitRecovery(ctx, err)
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
		// etcd unreachable, or refusing writes: try these names again later.
		l.w.requeue(names, since)
		l.retry = time.After(l.delay.Next())
		l.awaitRecovery(ctx, err)
		return nil
	}
	l.delay.Reset()
	return nil
}

// awaitRecovery watches for the end of what made work fail, to do it at once then: the
// connection's return, or etcd taking writes again when it refused them.
func (l *termWork) awaitRecovery(ctx context.Context, err error) {
	if l.up == nil {
		l.up = store.Reconnected(ctx, l.w.client)
	}
	if cause, refused := refusedAll(err); refused && l.accepted == nil {
		l.accepted = l.w.whenAccepted(ctx, cause, l.term)
	}
}

// retryNow does at once what waits out a delay.
func (l *termWork) retryNow() {
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

// newRetryDelay is the writer's wait after a failed campaign, term or write: short at first,
// so that a passing fault costs little, and at most 30s, so that a long outage is not hammered.
func newRetryDelay() *backoff.Backoff { return backoff.New(250*time.Millisecond, 30*time.Second) }
