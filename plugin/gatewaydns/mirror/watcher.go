// Package mirror is the serve path's side of etcd: it keeps an in-memory index equal to the
// records under a prefix, by one read of the prefix at a revision (streamed with etcd's
// RangeStream, or in pages where etcd does not offer it: load.go) and a Watch from that
// revision. It knows nothing of Kubernetes and is never called from a DNS query.
package mirror

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/backoff"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

// Sink is what the watcher keeps current: the index.
type Sink interface {
	// StartLoad begins the replacement of everything under prefix by what one read at one
	// revision finds, handed to it a part at a time.
	StartLoad(prefix string) *index.Loading
	Apply(changes []record.Change)
	// Replayed is a change at rev under prefix that the last Load holds already: a delete
	// between the newest key it read and its revision, which moves only the SOA serial.
	Replayed(prefix string, rev int64)
	SetLeaseExpiry(lease int64, at time.Time)
	ForgetLease(lease int64)
}

// Digester is a Sink that can sum up what it holds under a prefix (index.Index does); the
// consistency check runs only for one.
type Digester interface {
	Digest(prefix string) (index.Digest, bool)
}

// Observer is told what the watcher does, for metrics. Methods are called from the watcher's
// goroutines.
type Observer interface {
	Resynced(reason string, keys int, took time.Duration)
	Applied(puts, deletes int)
	Heard() // etcd answered: data or a progress notification
	Failed(op string, err error)
	// Reachable is told when etcd stops answering (false) and answers again (true):
	// transitions only, the first true at the first answer.
	Reachable(up bool)
}

const (
	requestTimeout  = 10 * time.Second
	openTimeout     = 5 * time.Second // a stream's wait for a connection (load.go)
	leaseRefresh    = 5 * time.Second
	leaseRPCTimeout = 5 * time.Second

	defaultCheckEvery = 5 * time.Minute
	defaultMaxReplay  = 1000
	// A frozen member under the watch is found within ProgressEvery + StallAfter (1.25 s)
	// and left (Members) before the next stream opens: a change is answered within the 2 s
	// the failover tests allow. etcd answers a progress request from memory; a stall taken
	// wrongly costs one resumed stream, not a reload.
	defaultProgressEvery = 500 * time.Millisecond
	defaultStallAfter    = 750 * time.Millisecond
	// outageAfter is how long etcd must have failed to answer before the watcher calls it
	// unreachable: one failed session between two good ones is not an outage.
	outageAfter = 4 * time.Second
)

var (
	errInconsistent = errors.New("index differs from etcd")
	errStalled      = errors.New("watch stream stalled: no event or progress notification")
	// errNewStore: etcd is not the store the Sink was loaded from (store.Lineage), or is behind
	// the revision the Sink holds: restored from a snapshot, or another cluster.
	errNewStore = errors.New("etcd is a new store")
)

// Watcher mirrors every key under a prefix into a Sink: one paged Get at a single revision,
// then a Watch from the revision after it. A failed consistency check, a new store (etcd
// restored from a snapshot, or another cluster: see store.Lineage and session.behind), or a
// compacted revision the Sink has not caught up to, triggers a fresh Get (a compaction of the history just after
// the load, or of the Sink's own revision alone, only moves where the watch starts). Any other
// failure resumes the watch from the last revision applied, with back-off, while the Sink
// keeps what it has.
type Watcher struct {
	Client   *clientv3.Client
	Prefix   string // e.g. "/skydns/"
	Sink     Sink
	Observer Observer
	Log      clog.P
	// Members, when set, is told of every failed load or session, so that the next one goes
	// to a member that answers (store.Members); the client's owner runs it.
	Members *store.Members

	// CheckEvery is how often the index is compared with etcd; 5 minutes when 0.
	CheckEvery time.Duration
	// MaxReplay is the longest history after a load's newest key, in revisions, that the
	// watch replays to find the deletes in it; 1000 when 0 (see replayFrom).
	MaxReplay int64
	// Grace is how long a key deleted by its lease's expiry is still answered, for its owner to
	// publish it again (grace.go); 0 applies such deletes at once.
	Grace time.Duration
	// ProgressEvery is how long a quiet watch waits before asking etcd for progress, and
	// StallAfter how long it then waits for any answer before it abandons the stream (and how
	// long a new stream has to answer at all); 500 ms and 750 ms when 0.
	ProgressEvery, StallAfter time.Duration

	// Leases seen in new keys, waiting to be read by trackLeases; wake tells it there are some.
	// The watch loop never blocks on lease reads.
	mu           sync.Mutex
	newLeases    []int64
	wake         chan struct{}
	heldPerLease map[int64]int // held keys per lease (grace.go)

	// Keys deleted by their lease's expiry, still answered (grace.go): Run's goroutine's.
	held map[string]held

	snapshots    chan chan snapshot // the check asks the running session for one
	inconsistent chan int64         // the load generation a check found wrong
	generation   int64              // loads so far; owned by Run's goroutine
	storeGen     uint64             // the store's generation (store.Lineage) the last load began in
	reach        reach
	noStream     atomic.Bool // etcd answered RangeStream with Unimplemented: read in pages (load.go)
}

// Run blocks until ctx is done; it returns only then, once its goroutines have ended.
func (w *Watcher) Run(ctx context.Context) {
	w.prepare()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { w.trackLeases(ctx) })
	wg.Go(func() { w.checkLoop(ctx) })

	var rev int64 // last revision the Sink reflects; 0: it needs a full load
	// from is where the next watch starts: rev, or rev+1 once rev is compacted away; after
	// a load, the revision after its newest key, so that the session replays the deletes
	// the load could not see, unless that history is too long (replayFrom).
	var from int64
	reason := "start"
	delay := backoff.New(100*time.Millisecond, 5*time.Second)
	for ctx.Err() == nil {
		if rev == 0 {
			loaded, newest, err := w.reload(ctx, reason)
			if err != nil {
				store.Pause(ctx, w.Client, delay, w.Members)
				continue
			}
			rev, from = loaded, w.replayFrom(newest, loaded)
			delay.Reset()
		}
		next, heard, err := w.session(ctx, rev, from)
		if heard {
			delay.Reset() // the link worked: resume at once
		}
		if next != rev {
			rev, from = next, next
		}
		if ctx.Err() != nil {
			return
		}
		switch endOf(err, rev, from) {
		case replayCompacted:
			// Which delete after the load's newest key came last is unknown. The load's
			// revision is not before it; replicas may differ until the next change.
			w.Log.Infof("History of %s after revision %d was compacted; its serial is the load's revision %d", w.Prefix, from-1, rev)
			w.Sink.Replayed(w.Prefix, rev)
			from = rev
		case heldRevisionCompacted:
			from = rev + 1 // what follows it is there
		case unseenCompacted:
			w.Log.Infof("Watch revision %d of %s was compacted; reloading", from, w.Prefix)
			rev, reason = 0, "compacted"
		case foundInconsistent:
			rev, reason = 0, "inconsistent"
		case foundNewStore:
			w.Log.Warningf("etcd is not the store %s was loaded from (restored from a snapshot, or another cluster): reloading", w.Prefix)
			rev, reason = 0, reasonNewStore
		case sessionFailed:
			w.failed(ctx, "watch", err)
			w.Log.Debugf("Watching %s stopped at revision %d, resuming: %v", w.Prefix, rev, err)
			store.Pause(ctx, w.Client, delay, w.Members)
		}
	}
}

// prepare makes what Run's goroutines share.
func (w *Watcher) prepare() {
	w.wake = make(chan struct{}, 1)
	w.snapshots = make(chan chan snapshot)
	w.inconsistent = make(chan int64, 1)
	w.reach.since = time.Now()
}

// reload replaces what the Sink holds by one read of etcd: a new load generation.
func (w *Watcher) reload(ctx context.Context, reason string) (loaded, newest int64, err error) {
	// Before the read: a new store found during it is one the read may have missed.
	w.storeGen, _ = w.Members.Lineage().Generation()
	w.dropHeld()
	loaded, newest, err = w.load(ctx, reason)
	if err != nil {
		if ctx.Err() == nil {
			w.failed(ctx, "get", err)
		}
		return 0, 0, err
	}
	w.generation++
	return loaded, newest, nil
}

// sessionEnd is why a session ended, as Run acts on it.
type sessionEnd int

const (
	// sessionFailed: anything else (etcd unreachable, a stalled stream): resume from the last
	// revision applied, after a back-off.
	sessionFailed sessionEnd = iota
	// replayCompacted: the history between a load's newest key and its revision, which the
	// session replays for the deletes in it, is gone: start at the load's revision.
	replayCompacted
	// heldRevisionCompacted: only the revision the Sink holds already is gone: start after it.
	heldRevisionCompacted
	// unseenCompacted: revisions the Sink has not seen are gone: reload.
	unseenCompacted
	// foundInconsistent: the consistency check found the Sink differs from etcd: reload.
	foundInconsistent
	// foundNewStore: etcd is not the store the Sink was loaded from: reload.
	foundNewStore
)

// endOf sorts out why a session that watched from revision from, the Sink at rev, ended.
func endOf(err error, rev, from int64) sessionEnd {
	var compacted compactedError
	switch {
	case errors.As(err, &compacted) && from < rev:
		return replayCompacted
	case errors.As(err, &compacted) && compacted.at <= rev+1 && from == rev:
		return heldRevisionCompacted
	case errors.Is(err, rpctypes.ErrCompacted):
		return unseenCompacted
	case errors.Is(err, errInconsistent):
		return foundInconsistent
	case errors.Is(err, errNewStore):
		return foundNewStore
	}
	return sessionFailed
}

// replayFrom is where the watch after a load starts: the revision after its newest key, so
// that the session replays the deletes the load could not see and the serial is the last
// change's revision, as on a replica that followed them. etcd answers such a watch by reading
// every revision since, of every key (not only the prefix's), in one go, holding the lock
// that every write and every other watcher of the member waits for: a quiet zone in an etcd
// written to elsewhere made that seconds, during which etcd stood still and the session,
// silent, was taken for stalled and began again. Beyond MaxReplay revisions the serial is
// the load's revision instead, as after a compaction: not before the last change, and the
// same on every replica from the next change on.
func (w *Watcher) replayFrom(newest, loaded int64) int64 {
	limit := w.MaxReplay
	if limit <= 0 {
		limit = defaultMaxReplay
	}
	if loaded-newest <= limit {
		return min(newest+1, loaded)
	}
	w.Log.Infof("Not replaying %d revisions of history after the newest key of %s (revision %d): its serial is the load's revision %d", loaded-newest-1, w.Prefix, newest, loaded)
	w.Sink.Replayed(w.Prefix, loaded)
	return loaded
}

// reasonNewStore is the reason of a reload of a new store (resyncs_total's label): the index
// bars IXFRs across it (index.Loading.NewStore).
const reasonNewStore = "new-store"
