// Package writer is the publish path's side of etcd: one owner's records kept equal to what its
// sources want, by the elected replica of that owner, in fenced and batched transactions. It
// knows nothing of Kubernetes.
package writer

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/statelog"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/txtregistry"
)

// DefaultBatchSize is etcd's default --max-txn-ops: the most operations one transaction holds.
const DefaultBatchSize = 128

// DefaultResyncInterval is how often a leader compares everything it wants with etcd.
const DefaultResyncInterval = 5 * time.Minute

// DefaultTimeout bounds one etcd request of the writer, all its attempts together.
const DefaultTimeout = 10 * time.Second

// DefaultAttemptTimeout bounds one attempt of an etcd request. A member that is frozen (a hung
// host, SIGSTOP) never answers; a short attempt lets the next one go to another member (see
// Config.Members) instead of waiting out the whole Timeout. The first attempt of a request
// has half of it: a batch of BatchSize operations takes milliseconds on a healthy etcd, so a
// change that meets a frozen member lands within about a second, and a slow etcd gets the
// whole attempt from the second on.
const DefaultAttemptTimeout = time.Second

// resignTimeout bounds the best-effort resign at shutdown: with etcd unreachable the election
// key expires with its session's TTL instead, and the process must not wait for that.
const resignTimeout = time.Second

// Desired is what the publish path wants. The writer asks it; it never pushes (it calls
// Writer.Enqueue with the names that changed).
type Desired interface {
	// Endpoint is the endpoint wanted for name (record.NormalizeName form), ok=false for none.
	Endpoint(name string) (ep record.Endpoint, ok bool)
	// Names are all the names wanted, for the full resync.
	Names() []string
	// Synced is false until every source has synced once (it stays true after, whatever the
	// Kubernetes API does: a source that loses it keeps its last state): the writer deletes
	// nothing before.
	Synced() bool
	// SyncedC is closed when every source has synced: the leader then runs a full resync, so
	// that deletes held back before it happen at once, not at the next periodic resync.
	SyncedC() <-chan struct{}
}

// Observer is told what the writer does, for metrics and Events. Calls come from the writer's
// goroutines, one at a time per writer; they must not block.
type Observer interface {
	// Leading is called when this replica starts (true) and stops (false) leading its owner.
	Leading(leading bool)
	// Committed is one transaction applied: its puts and deletes of own keys.
	Committed(puts, deletes int)
	// Conflict is a name lost to an older claim (see plan.Conflict), reported once per winner.
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

// ReachabilityObserver is an optional part of Observer: told whether etcd answers the writer,
// on transitions only (and once at the first answer or failure).
type ReachabilityObserver interface {
	EtcdReachable(reachable bool)
}

// AdoptionObserver is an optional part of Observer: told, once per reconcile that took any,
// how many keys external-dns wrote (records and TXT registry records) it deleted in taking
// them over (Config.Registry).
type AdoptionObserver interface {
	Adopted(keys int)
}

// ProblemObserver is an optional part of Observer: told how many names are lost to an older
// claim and how many failed at their last attempt, whenever that changes. Conflict and Failed
// report each problem once; these counts say how many last.
type ProblemObserver interface {
	Problems(lost, failing int)
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
	// when empty). With etcd auth the writer's role needs readwrite on <LeaderPrefix>/<Owner>/,
	// a dry-run writer's on <LeaderPrefix>-dry-run/<Owner>/.
	LeaderPrefix string
	// ClaimPrefix is where claims keep their names' guard keys (DefaultClaimPrefix when empty,
	// see claims.go). With etcd auth the writer's role needs readwrite on the names' key paths
	// below it, e.g. <ClaimPrefix>/skydns/cluster/openmcp/eu1/; without, claims compare their
	// names' whole key ranges.
	ClaimPrefix string
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
	// a writer that is gone lets its records expire. 0: records live until deleted. It must be
	// at least ElectionTTL + LeaseMargin (CheckLease; New refuses a shorter one), and the lease
	// belongs to the records, not to a term: a successor adopts it.
	Lease time.Duration
	// ElectionTTL is the election session's TTL (DefaultElectionTTL when 0).
	ElectionTTL time.Duration
	// ResyncInterval is the period of the full resync (DefaultResyncInterval when 0).
	ResyncInterval time.Duration
	// Timeout bounds each etcd request, its retries included (DefaultTimeout when 0).
	Timeout time.Duration
	// AttemptTimeout bounds one attempt of a request (DefaultAttemptTimeout when 0, at most
	// Timeout).
	AttemptTimeout time.Duration
	// Members, when set, is told of every attempt that failed on a member or the network
	// (store.Members): a frozen member then costs one attempt, not one in three. The
	// client's owner runs it.
	Members *store.Members
	// DryRun plans as usual and tells the Observer (DryRunObserver) what it would change, but
	// writes no record and takes no lease: for trying a writer beside a running external-dns.
	// Dry-run replicas elect one of them to tell, in an election of their own: a dry-run writer
	// never holds the leadership of the owner's real writers.
	DryRun bool
	// Registry, when set, takes over what external-dns's TXT registry says Registry.Owner holds
	// (plan.Input.Registry): each name's registry names are read with it, and a full resync
	// also visits the names that registry records or Registry.Owner's keys are found for.
	Registry *txtregistry.Config
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
	Adopted   int   // of Deletes, keys external-dns wrote, taken over (Config.Registry)
	Revision  int64 // etcd revision after the last commit (0: nothing committed)
	Conflicts []plan.Conflict
	Skipped   []plan.Skip
	// Failed are names not read or written, and why. A name here did not stop the others.
	Failed map[string]error

	// stale are names whose commit found their keys changed since they were read: they are
	// read and planned again.
	stale []string
	// revs are the names committed, each with the revision of its last transaction; seen is
	// what the owner holds at each name read (published.go).
	revs map[string]int64
	seen map[string]seenName
}

func (r *Result) fail(name string, err error) {
	if r.Failed == nil {
		r.Failed = make(map[string]error)
	}
	r.Failed[name] = err
}

// add adds what another part of the same reconcile committed and failed.
func (r *Result) add(o *Result) {
	r.Txns += o.Txns
	r.Puts += o.Puts
	r.Deletes += o.Deletes
	r.Adopted += o.Adopted
	r.Revision = max(r.Revision, o.Revision)
	r.Conflicts = append(r.Conflicts, o.Conflicts...)
	r.Skipped = append(r.Skipped, o.Skipped...)
	for n, err := range o.Failed {
		r.fail(n, err)
	}
	r.stale = append(r.stale, o.stale...)
	for n, rev := range o.revs {
		r.committed(n, rev)
	}
	for n, s := range o.seen {
		if r.seen == nil {
			r.seen = make(map[string]seenName, len(o.seen))
		}
		r.seen[n] = s
	}
}

// committed records that a transaction at revision rev changed name's records.
func (r *Result) committed(name string, rev int64) {
	if r.revs == nil {
		r.revs = make(map[string]int64)
	}
	r.revs[name] = max(r.revs[name], rev)
}

// Writer keeps one owner's records in etcd equal to what Desired wants. Of the replicas of an
// owner, only the elected one writes; its every transaction is fenced on its election key.
type Writer struct {
	client *clientv3.Client
	cfg    Config
	obs    Observer
	el     *Election

	opMu sync.Mutex // one reconcile at a time

	reach    statelog.State[reachability] // what the Observer was last told of etcd (request.go)
	refusing statelog.State[string]       // the cause etcd refuses the writes for, "" none (refusal.go)

	mu      sync.Mutex
	term    *Term
	lease   clientv3.LeaseID
	watches *store.Watches       // the current term's: its lost names are watched on them
	deposed chan struct{}        // closed when the current term is known to be over
	pending map[string]time.Time // name -> when it was first enqueued
	wake    chan struct{}
	// lost are the names held by an older claim in exclusive mode (lost.go).
	lost lostNames
	// guardsDenied: etcd refused a claim guard, claims compare key ranges (claims.go).
	guardsDenied atomic.Bool
	// settled: this replica has led and made a full resync, or has stood by behind another
	// replica's live election key (Settled).
	settled atomic.Bool

	reports reports
	// planned is what a dry run told of each name (dryrun.go).
	planned planned
}

// checked is cfg with its defaults filled in, or why it cannot be used.
func (cfg Config) checked() (Config, error) {
	if cfg.Owner == "" {
		return cfg, errors.New("writer: an owner id is required")
	}
	if strings.ContainsAny(cfg.Owner, "/\"") {
		return cfg, fmt.Errorf("writer: owner id %q must not contain / or \"", cfg.Owner)
	}
	if cfg.Desired == nil {
		return cfg, errors.New("writer: no desired state")
	}
	if cfg.Registry != nil {
		if err := cfg.Registry.Check(); err != nil {
			return cfg, fmt.Errorf("writer: %w", err)
		}
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
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = DefaultAttemptTimeout
	}
	cfg.AttemptTimeout = min(cfg.AttemptTimeout, cfg.Timeout)
	if cfg.Lease > 0 {
		if err := CheckLease(cfg.Lease, cfg.ElectionTTL); err != nil {
			return cfg, fmt.Errorf("writer: %w", err)
		}
	}
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	return cfg, nil
}

// New checks cfg and fills in the defaults (Config.checked). Nothing runs until Run.
func New(client *clientv3.Client, cfg Config) (*Writer, error) {
	cfg, err := cfg.checked()
	if err != nil {
		return nil, err
	}
	obs := cfg.Observer
	if obs == nil {
		obs = NopObserver{}
	}
	leaderPrefix := cmp.Or(cfg.LeaderPrefix, DefaultLeaderPrefix)
	if cfg.DryRun {
		leaderPrefix = path.Clean(leaderPrefix) + dryRunElection
	}
	el := NewElection(client, leaderPrefix, cfg.Owner, cfg.Identity, cfg.ElectionTTL)
	el.attempt = cfg.AttemptTimeout
	el.members = cfg.Members
	wr := &Writer{
		client:  client,
		cfg:     cfg,
		obs:     obs,
		el:      el,
		pending: make(map[string]time.Time),
		wake:    make(chan struct{}, 1),
		lost:    lostNames{names: make(map[string]int64)},
	}
	el.reached = wr.reached
	el.standingBy = wr.settleElection
	el.wrote = wr.accepted
	return wr, nil
}

// Settled reports whether this replica has found its place in the election: it has led and
// made a full resync (it writes), or it has stood by behind the election key of another
// replica, which lives only while that replica keeps its session alive (a leader writes). A
// replica that has neither, say one waiting out the key of a crashed predecessor of another
// identity, is not settled: nothing writes yet. Once settled, a replica stays so.
func (w *Writer) Settled() bool { return w.settled.Load() }

func (w *Writer) settleElection() { w.settled.Store(true) }

// Enqueue asks for names to be reconciled soon. It never blocks; names enqueued several times
// before the leader gets to them are reconciled once. A replica that does not lead keeps
// nothing: its term, when it comes, starts with a full resync that covers every name, so a
// standby's memory does not grow with the changes it sees (a million names on a standby held
// a million entries until it led).
func (w *Writer) Enqueue(names ...string) {
	now := time.Now()
	w.mu.Lock()
	if w.term == nil {
		w.mu.Unlock()
		return
	}
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

func (w *Writer) setTerm(t *Term, lease clientv3.LeaseID, watches *store.Watches) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.term, w.lease, w.watches = t, lease, watches
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
