// Package writer is the publish path's side of etcd: one owner's records kept equal to what its
// sources want, by the elected replica of that owner, in fenced and batched transactions. It
// knows nothing of Kubernetes.
package writer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/backoff"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// DefaultBatchSize is etcd's default --max-txn-ops: the most operations one transaction holds.
const DefaultBatchSize = 128

// DefaultResyncInterval is how often a leader compares everything it wants with etcd.
const DefaultResyncInterval = 5 * time.Minute

// DefaultTimeout bounds one etcd request of the writer.
const DefaultTimeout = 10 * time.Second

// Desired is what the publish path wants. The writer asks it; it never pushes (it calls
// Writer.Enqueue with the names that changed).
type Desired interface {
	// Endpoint is the endpoint wanted for name (record.NormalizeName form), ok=false for none.
	Endpoint(name string) (ep record.Endpoint, ok bool)
	// Names are all the names wanted, for the full resync.
	Names() []string
	// Synced is false while a source has not synced (or lost the Kubernetes API): the writer
	// then deletes nothing.
	Synced() bool
}

// Observer is told what the writer does, for metrics and Events. Calls come from the writer's
// goroutines, one at a time per writer; they must not block.
type Observer interface {
	// Leading is called when this replica starts (true) and stops (false) leading its owner.
	Leading(leading bool)
	// Committed is one transaction applied: its puts and deletes of own keys.
	Committed(puts, deletes int)
	// Conflict is a name lost to an older owner in exclusive mode.
	Conflict(c plan.Conflict)
	// Skipped is a name, or its deletes, left alone (domain filter, a key held by another
	// writer, the policy, sources not synced).
	Skipped(s plan.Skip)
	// Failed is a name (or, for a full resync's scan, a zone) that could not be read or written,
	// e.g. permission denied for a name outside the credentials' prefix. It is retried at the
	// next resync.
	Failed(name string, err error)
	// Synced is a full resync that read and wrote everything without failure.
	Synced(at time.Time)
	// Propagated is the time from Enqueue of name to the commit of its change.
	Propagated(name string, delay time.Duration)
}

// NopObserver ignores everything; embed it to implement part of Observer.
type NopObserver struct{}

func (NopObserver) Leading(bool)                     {}
func (NopObserver) Committed(int, int)               {}
func (NopObserver) Conflict(plan.Conflict)           {}
func (NopObserver) Skipped(plan.Skip)                {}
func (NopObserver) Failed(string, error)             {}
func (NopObserver) Synced(time.Time)                 {}
func (NopObserver) Propagated(string, time.Duration) {}

// Config is what a writer does. Owner and Desired are required.
type Config struct {
	// Prefix is the records' path (record.DefaultPrefix when empty).
	Prefix string
	// LeaderPrefix is where the replicas of an owner elect their leader (DefaultLeaderPrefix
	// when empty). With etcd auth the writer's role needs readwrite on <LeaderPrefix>/<Owner>/.
	LeaderPrefix string
	// Owner is the owner id written into every key, e.g. "<environment>.<namespace>.<cluster>".
	Owner string
	// Identity is stored at the leader key for people (default "<hostname>/<pid>").
	Identity string
	// Policy and Conflicts: see package plan.
	Policy    plan.Policy
	Conflicts plan.ConflictMode
	// Allow is the domain filter; nil allows every name.
	Allow func(name string) bool
	// Zones are the DNS names whose subtrees a full resync reads to find this owner's keys
	// (names no longer wanted). Empty: the whole Prefix. With etcd auth, name the subtree the
	// credentials may read, e.g. "eu1.openmcp.cluster".
	Zones []string
	// BatchSize is the most operations in one transaction (DefaultBatchSize when 0); keep it at
	// or below etcd's --max-txn-ops.
	BatchSize int
	// Lease, when > 0, binds own keys to an etcd lease of this TTL that the leader keeps alive:
	// a writer that is gone lets its records expire. 0: records live until deleted.
	Lease time.Duration
	// ElectionTTL is the election session's TTL (DefaultElectionTTL when 0).
	ElectionTTL time.Duration
	// ResyncInterval is the period of the full resync (DefaultResyncInterval when 0).
	ResyncInterval time.Duration
	// Timeout bounds each etcd request (DefaultTimeout when 0).
	Timeout time.Duration
	// Desired is what to publish.
	Desired Desired
	// Observer is told what happens (NopObserver when nil).
	Observer Observer
}

// Result is what one Reconcile or Resync did.
type Result struct {
	Txns      int   // transactions committed
	Puts      int   // keys put
	Deletes   int   // keys deleted
	Revision  int64 // etcd revision after the last commit (0: nothing committed)
	Conflicts []plan.Conflict
	Skipped   []plan.Skip
	// Failed are names not read or written, and why. A name here did not stop the others.
	Failed map[string]error
}

func (r *Result) fail(name string, err error) {
	if r.Failed == nil {
		r.Failed = make(map[string]error)
	}
	r.Failed[name] = err
}

// Writer keeps one owner's records in etcd equal to what Desired wants. Of the replicas of an
// owner, only the elected one writes; its every transaction is fenced on its election key.
type Writer struct {
	client *clientv3.Client
	cfg    Config
	obs    Observer
	el     *Election

	opMu sync.Mutex // one reconcile at a time

	mu      sync.Mutex
	term    *Term
	lease   clientv3.LeaseID
	deposed chan struct{}        // closed when the current term is known to be over
	pending map[string]time.Time // name -> when it was first enqueued
	wake    chan struct{}
	// lost are the names held by an older claim in exclusive mode, each with the cancel of the
	// watch that enqueues it again when a key of it is deleted: the claim's owner withdrawing
	// frees the name, and the next claim in line takes it at once, not at the next resync.
	lost map[string]*lostWatch
}

type lostWatch struct{ cancel context.CancelFunc }

// New checks cfg and fills in the defaults. Nothing runs until Run.
func New(client *clientv3.Client, cfg Config) (*Writer, error) {
	if cfg.Owner == "" {
		return nil, errors.New("writer: an owner id is required")
	}
	if strings.ContainsAny(cfg.Owner, "/\"") {
		return nil, fmt.Errorf("writer: owner id %q must not contain / or \"", cfg.Owner)
	}
	if cfg.Desired == nil {
		return nil, errors.New("writer: no desired state")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = record.DefaultPrefix
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.ResyncInterval <= 0 {
		cfg.ResyncInterval = DefaultResyncInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	obs := cfg.Observer
	if obs == nil {
		obs = NopObserver{}
	}
	return &Writer{
		client:  client,
		cfg:     cfg,
		obs:     obs,
		el:      NewElection(client, cfg.LeaderPrefix, cfg.Owner, cfg.Identity, cfg.ElectionTTL),
		pending: make(map[string]time.Time),
		wake:    make(chan struct{}, 1),
		lost:    make(map[string]*lostWatch),
	}, nil
}

// Enqueue asks for names to be reconciled soon. It never blocks; names enqueued several times
// before the leader gets to them are reconciled once. A replica that does not lead keeps them
// and, once it leads, starts with a full resync that covers them.
func (w *Writer) Enqueue(names ...string) {
	now := time.Now()
	w.mu.Lock()
	for _, n := range names {
		n = record.NormalizeName(n)
		if _, ok := w.pending[n]; !ok && n != "" {
			w.pending[n] = now
		}
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// IsLeader reports whether this replica leads its owner now.
func (w *Writer) IsLeader() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.term != nil
}

func (w *Writer) current() (*Term, clientv3.LeaseID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.term, w.lease
}

func (w *Writer) setTerm(t *Term, lease clientv3.LeaseID) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.term, w.lease = t, lease
	w.deposed = make(chan struct{})
	return w.deposed
}

// depose ends term when it is still the current one: etcd rejected its fence, or its election
// key is gone.
func (w *Writer) depose(term *Term) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.term == term && term != nil {
		w.term, w.lease = nil, 0
		close(w.deposed)
	}
}

// watchKey deposes term as soon as its election key is deleted (resigned by hand, its
// session's lease revoked or expired), without waiting for the session's next keep-alive.
func (w *Writer) watchKey(ctx context.Context, term *Term) {
	for ev := range w.client.Watch(ctx, term.Key, clientv3.WithRev(term.Rev)) {
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

// Run campaigns for the owner's leadership and, while it leads, reconciles: a full resync at
// the start of each term and every ResyncInterval, and the enqueued names as they come. It
// returns when ctx ends, after resigning, so a standby replica takes over at once. Run's own
// failures are retried; they reach the Observer, never the caller.
func (w *Writer) Run(ctx context.Context) error {
	delay := newRetryDelay()
	for ctx.Err() == nil {
		term, err := w.el.Campaign(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			w.obs.Failed(w.el.Prefix(), err)
			delay.Sleep(ctx)
			continue
		}
		delay.Reset()
		err = w.lead(ctx, term)
		rctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
		_ = term.Resign(rctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			w.obs.Failed(w.el.Prefix(), err)
			delay.Sleep(ctx)
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
	if w.cfg.Lease > 0 {
		var err error
		lease, leaseLost, err = w.grantLease(ctx)
		if err != nil {
			return err
		}
	}
	deposed := w.setTerm(term, lease)
	w.obs.Leading(true)
	defer func() {
		w.depose(term)
		w.forgetLost()
		w.obs.Leading(false)
	}()
	go w.watchKey(ctx, term)

	// The full resync at the start covers everything enqueued so far.
	w.mu.Lock()
	clear(w.pending)
	w.mu.Unlock()

	delay := newRetryDelay()
	resync := time.NewTimer(0)
	defer resync.Stop()
	var retry <-chan time.Time
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
		case <-resync.C:
			_, err := w.resync(ctx, term, lease)
			if errors.Is(err, ErrNotLeader) {
				return err
			}
			if err != nil && ctx.Err() == nil {
				resync.Reset(delay.Next())
				continue
			}
			delay.Reset()
			resync.Reset(w.cfg.ResyncInterval)
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
				continue
			}
			delay.Reset()
		}
	}
}

// grantLease grants the records' lease and keeps it alive until ctx ends; lost is closed when
// the keep-alive stops. The lease is not revoked at the end: the records outlive the writer by
// the lease's TTL, time for a successor to take them over.
func (w *Writer) grantLease(ctx context.Context) (clientv3.LeaseID, <-chan struct{}, error) {
	ttl := int64((w.cfg.Lease + time.Second - 1) / time.Second)
	gctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	resp, err := w.client.Grant(gctx, max(ttl, 1))
	cancel()
	if err != nil {
		return 0, nil, fmt.Errorf("granting the records' lease: %w", err)
	}
	ka, err := w.client.KeepAlive(ctx, resp.ID)
	if err != nil {
		return 0, nil, fmt.Errorf("keeping the records' lease alive: %w", err)
	}
	lost := make(chan struct{})
	go func() {
		defer close(lost)
		for range ka {
		}
	}()
	return resp.ID, lost, nil
}

func (w *Writer) takePending() ([]string, map[string]time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) == 0 {
		return nil, nil
	}
	since := w.pending
	w.pending = make(map[string]time.Time, len(since))
	names := make([]string, 0, len(since))
	for n := range since {
		names = append(names, n)
	}
	return names, since
}

func (w *Writer) requeue(names []string, since map[string]time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range names {
		if _, ok := w.pending[n]; !ok {
			w.pending[n] = since[n]
		}
	}
}

// Reconcile makes the records of names what Desired wants now. It fails with ErrNotLeader when
// this replica does not lead. Names that cannot be read or written are in Result.Failed and
// do not stop the others; err is for what stopped the whole reconcile (deposed, etcd
// unreachable).
func (w *Writer) Reconcile(ctx context.Context, names []string) (Result, error) {
	term, lease := w.current()
	if term == nil {
		return Result{}, ErrNotLeader
	}
	return w.reconcile(ctx, term, lease, names, nil)
}

// Resync reconciles every name Desired wants and every name this owner has keys for (found in
// Zones): what a key deleted by hand, or any other drift, needs.
func (w *Writer) Resync(ctx context.Context) (Result, error) {
	term, lease := w.current()
	if term == nil {
		return Result{}, ErrNotLeader
	}
	return w.resync(ctx, term, lease)
}

func (w *Writer) resync(ctx context.Context, term *Term, lease clientv3.LeaseID) (Result, error) {
	names := make(map[string]bool)
	for _, n := range w.cfg.Desired.Names() {
		names[record.NormalizeName(n)] = true
	}
	zones := w.cfg.Zones
	if len(zones) == 0 {
		zones = []string{""}
	}
	var scanFailed []error
	for _, z := range zones {
		p := record.NamePath(w.cfg.Prefix, z) + "/"
		gctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
		resp, err := w.client.Get(gctx, p, clientv3.WithPrefix())
		cancel()
		if err != nil {
			if !perKey(err) {
				return Result{}, fmt.Errorf("reading %s: %w", p, err)
			}
			label := z
			if label == "" {
				label = p
			}
			w.obs.Failed(label, err)
			scanFailed = append(scanFailed, err)
			continue
		}
		for _, kv := range resp.Kvs {
			if record.OwnerOf(kv.Value) != w.cfg.Owner {
				continue
			}
			if n, ok := record.RecordName(w.cfg.Prefix, string(kv.Key)); ok {
				names[n] = true
			}
		}
	}
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	res, err := w.reconcile(ctx, term, lease, list, nil)
	if err == nil && len(res.Failed) == 0 && len(scanFailed) == 0 {
		w.obs.Synced(time.Now())
	}
	return res, err
}

func (w *Writer) reconcile(ctx context.Context, term *Term, lease clientv3.LeaseID, names []string, since map[string]time.Time) (Result, error) {
	w.opMu.Lock()
	defer w.opMu.Unlock()

	var res Result
	names = normalize(names)
	if len(names) == 0 {
		return res, nil
	}
	current, readable, rev, err := w.read(ctx, names, &res)
	if err != nil {
		return res, err
	}
	d := w.cfg.Desired
	desired := make([]record.Endpoint, 0, len(readable))
	for _, n := range readable {
		if ep, ok := d.Endpoint(n); ok {
			desired = append(desired, ep)
		}
	}
	p := plan.Make(plan.Input{
		Prefix:    w.cfg.Prefix,
		Owner:     w.cfg.Owner,
		Policy:    w.cfg.Policy,
		Conflicts: w.cfg.Conflicts,
		Lease:     int64(lease),
		Allow:     w.cfg.Allow,
		Synced:    d.Synced(),
		Names:     readable,
		Desired:   desired,
		Current:   current,
	})
	res.Conflicts, res.Skipped = p.Conflicts, p.Skipped
	for _, c := range p.Conflicts {
		w.obs.Conflict(c)
	}
	w.trackLost(ctx, readable, p.Conflicts, rev)
	for _, s := range p.Skipped {
		w.obs.Skipped(s)
	}
	err = w.apply(ctx, term, p.Changes, &res)
	if errors.Is(err, ErrNotLeader) {
		w.depose(term)
	}
	if len(since) > 0 {
		now := time.Now()
		for _, n := range names {
			if _, failed := res.Failed[n]; !failed && err == nil && !since[n].IsZero() {
				w.obs.Propagated(n, now.Sub(since[n]))
			}
		}
	}
	return res, err
}

func normalize(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := make([]string, 0, len(names))
	for _, n := range names {
		n = record.NormalizeName(n)
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// read returns the keys one level below each name's key, of every owner, reading up to
// BatchSize names per transaction, and the oldest revision read at. A name that cannot be read
// (permission denied) is recorded in res and left out of readable.
func (w *Writer) read(ctx context.Context, names []string, res *Result) (current []plan.KV, readable []string, rev int64, err error) {
	var readBatch func(batch []string) error
	readBatch = func(batch []string) error {
		ops := make([]clientv3.Op, len(batch))
		for i, n := range batch {
			ops[i] = clientv3.OpGet(record.NamePath(w.cfg.Prefix, n)+"/", clientv3.WithPrefix())
		}
		tctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
		resp, err := w.client.Txn(tctx).Then(ops...).Commit()
		cancel()
		if err != nil {
			if !perKey(err) {
				return err
			}
			if len(batch) == 1 {
				res.fail(batch[0], fmt.Errorf("reading: %w", err))
				w.obs.Failed(batch[0], fmt.Errorf("reading: %w", err))
				return nil
			}
			h := len(batch) / 2
			if err := readBatch(batch[:h]); err != nil {
				return err
			}
			return readBatch(batch[h:])
		}
		if rev == 0 || resp.Header.Revision < rev {
			rev = resp.Header.Revision
		}
		for i, n := range batch {
			base := record.NamePath(w.cfg.Prefix, n) + "/"
			for _, kv := range resp.Responses[i].GetResponseRange().Kvs {
				k := string(kv.Key)
				if strings.Contains(k[len(base):], "/") {
					continue // a record of a name below n
				}
				current = append(current, plan.KV{Key: k, Value: kv.Value, CreateRevision: kv.CreateRevision,
					ModRevision: kv.ModRevision, Lease: kv.Lease})
			}
			readable = append(readable, n)
		}
		return nil
	}
	for i := 0; i < len(names); i += w.cfg.BatchSize {
		if err := readBatch(names[i:min(i+w.cfg.BatchSize, len(names))]); err != nil {
			return nil, nil, 0, err
		}
	}
	return current, readable, rev, nil
}

// trackLost watches the names just lost to an older claim, from the revision they were read
// at, and stops watching the names of this reconcile that are no longer lost.
func (w *Writer) trackLost(ctx context.Context, reconciled []string, conflicts []plan.Conflict, rev int64) {
	lost := make(map[string]bool, len(conflicts))
	for _, c := range conflicts {
		lost[c.Name] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range reconciled {
		lw, watched := w.lost[n]
		switch {
		case lost[n] && !watched:
			wctx, cancel := context.WithCancel(ctx)
			lw = &lostWatch{cancel: cancel}
			w.lost[n] = lw
			go w.watchLost(wctx, lw, n, rev+1)
		case !lost[n] && watched:
			lw.cancel()
			delete(w.lost, n)
		}
	}
}

// watchLost enqueues name when a key of it is deleted after rev.
func (w *Writer) watchLost(ctx context.Context, lw *lostWatch, name string, rev int64) {
	base := record.NamePath(w.cfg.Prefix, name) + "/"
	for resp := range w.client.Watch(ctx, base, clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithFilterPut()) {
		if ctx.Err() != nil {
			return
		}
		if len(resp.Events) > 0 || resp.Err() != nil {
			// A compacted watch may have missed the delete: look again. The name's reconcile
			// starts a new watch while it is still lost.
			w.mu.Lock()
			if w.lost[name] == lw {
				delete(w.lost, name)
			}
			w.mu.Unlock()
			lw.cancel()
			w.Enqueue(name)
			return
		}
	}
}

// forgetLost stops every lost name's watch at the end of a term.
func (w *Writer) forgetLost() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for n, lw := range w.lost {
		lw.cancel()
		delete(w.lost, n)
	}
}

// apply commits the changes in fenced transactions of at most BatchSize operations, every
// name's change whole in one transaction (a change larger than a batch is split: its puts
// first, then its deletes, so the name is never without records). A transaction that fails for
// one of its keys (permission denied, too large) is split until the failing names are found;
// they are recorded in res, the others committed.
func (w *Writer) apply(ctx context.Context, term *Term, changes []plan.Change, res *Result) error {
	var batch []plan.Change
	ops := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := w.commitSplitting(ctx, term, batch, res)
		batch, ops = nil, 0
		return err
	}
	for i, c := range changes {
		if c.Ops() > w.cfg.BatchSize {
			if err := flush(); err != nil {
				return w.failRest(changes[i:], res, err)
			}
			if err := w.commitLarge(ctx, term, c, res); err != nil {
				return w.failRest(changes[i+1:], res, err)
			}
			continue
		}
		if ops+c.Ops() > w.cfg.BatchSize {
			if err := flush(); err != nil {
				return w.failRest(changes[i:], res, err)
			}
		}
		batch = append(batch, c)
		ops += c.Ops()
	}
	if err := flush(); err != nil {
		return err
	}
	return nil
}

func (w *Writer) failRest(rest []plan.Change, res *Result, err error) error {
	for _, c := range rest {
		res.fail(c.Name, err)
	}
	return err
}

// commitLarge writes one name's change that exceeds a batch: all puts, then the deletes.
func (w *Writer) commitLarge(ctx context.Context, term *Term, c plan.Change, res *Result) error {
	var parts []plan.Change
	for i := 0; i < len(c.Puts); i += w.cfg.BatchSize {
		parts = append(parts, plan.Change{Name: c.Name, Puts: c.Puts[i:min(i+w.cfg.BatchSize, len(c.Puts))]})
	}
	for i := 0; i < len(c.Deletes); i += w.cfg.BatchSize {
		parts = append(parts, plan.Change{Name: c.Name, Deletes: c.Deletes[i:min(i+w.cfg.BatchSize, len(c.Deletes))]})
	}
	for _, p := range parts {
		if err := w.commit(ctx, term, []plan.Change{p}, res); err != nil {
			if perKey(err) {
				res.fail(c.Name, err)
				w.obs.Failed(c.Name, err)
				return nil
			}
			return err
		}
	}
	return nil
}

func (w *Writer) commitSplitting(ctx context.Context, term *Term, batch []plan.Change, res *Result) error {
	err := w.commit(ctx, term, batch, res)
	if err == nil || !perKey(err) {
		if err != nil {
			for _, c := range batch {
				res.fail(c.Name, err)
			}
		}
		return err
	}
	if len(batch) == 1 {
		res.fail(batch[0].Name, err)
		w.obs.Failed(batch[0].Name, err)
		return nil
	}
	h := len(batch) / 2
	if err := w.commitSplitting(ctx, term, batch[:h], res); err != nil {
		for _, c := range batch[h:] {
			res.fail(c.Name, err)
		}
		return err
	}
	return w.commitSplitting(ctx, term, batch[h:], res)
}

// commit applies one batch in one transaction fenced on the term's election key.
func (w *Writer) commit(ctx context.Context, term *Term, batch []plan.Change, res *Result) error {
	var ops []clientv3.Op
	puts, dels := 0, 0
	for _, c := range batch {
		for _, p := range c.Puts {
			var opts []clientv3.OpOption
			if p.Lease != 0 {
				opts = append(opts, clientv3.WithLease(clientv3.LeaseID(p.Lease)))
			}
			ops = append(ops, clientv3.OpPut(p.Key, string(p.Value), opts...))
			puts++
		}
		for _, d := range c.Deletes {
			ops = append(ops, clientv3.OpDelete(d))
			dels++
		}
	}
	tctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	resp, err := w.client.Txn(tctx).If(term.Fence()).Then(ops...).Commit()
	cancel()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return ErrNotLeader
	}
	res.Txns++
	res.Puts += puts
	res.Deletes += dels
	res.Revision = resp.Header.Revision
	w.obs.Committed(puts, dels)
	return nil
}

// perKey tells the errors that come from a key of the request, not from etcd or the network:
// splitting the request isolates them.
func perKey(err error) bool {
	for _, e := range []error{rpctypes.ErrPermissionDenied, rpctypes.ErrGRPCPermissionDenied,
		rpctypes.ErrTooManyOps, rpctypes.ErrGRPCTooManyOps,
		rpctypes.ErrRequestTooLarge, rpctypes.ErrGRPCRequestTooLarge} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// newRetryDelay is the writer's wait after a failed campaign, term or write: short at first,
// so that a passing fault costs little, and at most 30s, so that a long outage is not hammered.
func newRetryDelay() *backoff.Backoff { return backoff.New(250*time.Millisecond, 30*time.Second) }
