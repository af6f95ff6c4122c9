// Package mirror is the serve path's side of etcd: it keeps an in-memory index equal to the
// records under a prefix, by one paged Get and a Watch from its revision. It knows nothing of
// Kubernetes and is never called from a DNS query.
package mirror

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/backoff"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Sink is what the watcher keeps current: the index.
type Sink interface {
	Load(prefix string, kvs []record.KV) // everything under prefix, at one revision
	Apply(changes []record.Change)
	SetLeaseExpiry(lease int64, at time.Time)
	ForgetLease(lease int64)
}

// Observer is told what the watcher does, for metrics. Methods are called from the watcher's
// goroutines.
type Observer interface {
	Resynced(reason string, keys int, took time.Duration)
	Applied(puts, deletes int)
	Heard() // etcd answered: data or a progress notification
	Failed(op string, err error)
}

const (
	pageSize        = 5000 // keys per read of a full load, to bound memory and message size
	requestTimeout  = 30 * time.Second
	leaseRefresh    = 5 * time.Second
	leaseRPCTimeout = 5 * time.Second
)

// Watcher mirrors every key under a prefix into a Sink: one paged Get at a single revision,
// then a Watch from the revision after it. A compacted revision triggers a fresh Get; any other
// failure is retried with back-off while the Sink keeps what it has.
type Watcher struct {
	Client   *clientv3.Client
	Prefix   string // e.g. "/skydns/"
	Sink     Sink
	Observer Observer
	Log      clog.P

	// Leases seen in new keys, waiting to be read by trackLeases; wake tells it there are some.
	// The watch loop never blocks on lease reads.
	mu        sync.Mutex
	newLeases []int64
	wake      chan struct{}
}

// Run blocks until ctx is done; it returns only then.
func (w *Watcher) Run(ctx context.Context) {
	w.wake = make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.trackLeases(ctx)
	}()
	defer wg.Wait()

	var rev int64 // last revision the Sink reflects; 0: it needs a full load
	reason := "start"
	delay := backoff.New(100*time.Millisecond, 5*time.Second)
	for ctx.Err() == nil {
		if rev == 0 {
			loaded, err := w.load(ctx, reason)
			if err != nil {
				if ctx.Err() == nil {
					w.Observer.Failed("get", err)
					w.Log.Warningf("Loading %s from etcd failed, retrying: %v", w.Prefix, err)
				}
				delay.Sleep(ctx)
				continue
			}
			rev = loaded
		}
		next, err := w.watch(ctx, rev)
		if next > rev {
			delay.Reset() // progress was made: the link works again
		}
		rev = next
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, rpctypes.ErrCompacted):
			w.Log.Infof("Watch revision %d of %s was compacted; reloading", rev+1, w.Prefix)
			rev, reason = 0, "compacted"
		default:
			w.Observer.Failed("watch", err)
			w.Log.Warningf("Watching %s failed at revision %d, resuming: %v", w.Prefix, rev, err)
			delay.Sleep(ctx)
		}
	}
}

// load reads every key under the prefix at one revision, in pages, and hands them to the Sink.
func (w *Watcher) load(ctx context.Context, reason string) (int64, error) {
	start := time.Now()
	var (
		kvs  []record.KV
		rev  int64
		from = w.Prefix
		end  = clientv3.GetPrefixRangeEnd(w.Prefix)
	)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(pageSize)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		resp, err := w.Client.Get(rctx, from, opts...)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("reading %s: %w", w.Prefix, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			kvs = append(kvs, toKV(kv))
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	w.Sink.Load(w.Prefix, kvs)
	var leases []int64
	for _, kv := range kvs {
		if kv.Lease != 0 {
			leases = append(leases, kv.Lease)
		}
	}
	w.noteLeases(leases)
	w.Observer.Heard()
	w.Observer.Resynced(reason, len(kvs), time.Since(start))
	w.Log.Infof("Loaded %d keys of %s at revision %d in %s", len(kvs), w.Prefix, rev, time.Since(start).Round(time.Millisecond))
	return rev, nil
}

// watch applies every change after rev until the watch fails; it returns the last revision
// applied and why it stopped.
func (w *Watcher) watch(ctx context.Context, rev int64) (int64, error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := w.Client.Watch(wctx, w.Prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithProgressNotify())
	for resp := range wch {
		if resp.CompactRevision != 0 {
			return rev, rpctypes.ErrCompacted
		}
		if err := resp.Err(); err != nil {
			return rev, err
		}
		w.Observer.Heard()
		if len(resp.Events) == 0 {
			continue
		}
		changes := make([]record.Change, len(resp.Events))
		var puts, deletes int
		var leases []int64
		for i, ev := range resp.Events {
			changes[i] = record.Change{KV: toKV(ev.Kv), Deleted: ev.Type == clientv3.EventTypeDelete}
			if changes[i].Deleted {
				deletes++
			} else {
				puts++
				if ev.Kv.Lease != 0 {
					leases = append(leases, ev.Kv.Lease)
				}
			}
		}
		w.Sink.Apply(changes)
		w.Observer.Applied(puts, deletes)
		w.noteLeases(leases)
		rev = resp.Header.Revision
	}
	if ctx.Err() != nil {
		return rev, ctx.Err()
	}
	return rev, errors.New("watch channel closed")
}

func (w *Watcher) noteLeases(leases []int64) {
	if len(leases) == 0 {
		return
	}
	w.mu.Lock()
	w.newLeases = append(w.newLeases, leases...)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// trackLeases keeps the Sink told of when each lease in use expires, so that a query can give
// a leased key's remaining life without asking etcd. New leases are read at once, known ones
// every leaseRefresh; a keep-alive in between only makes the answer shorter than it could be,
// never longer than the lease.
func (w *Watcher) trackLeases(ctx context.Context) {
	known := map[int64]struct{}{}
	tick := time.NewTicker(leaseRefresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
			w.mu.Lock()
			ids := w.newLeases
			w.newLeases = nil
			w.mu.Unlock()
			for _, id := range ids {
				if _, ok := known[id]; !ok {
					known[id] = struct{}{}
					w.refreshLease(ctx, id, known)
				}
			}
		case <-tick.C:
			for id := range known {
				w.refreshLease(ctx, id, known)
			}
		}
	}
}

func (w *Watcher) refreshLease(ctx context.Context, id int64, known map[int64]struct{}) {
	rctx, cancel := context.WithTimeout(ctx, leaseRPCTimeout)
	defer cancel()
	asked := time.Now()
	resp, err := w.Client.TimeToLive(rctx, clientv3.LeaseID(id))
	switch {
	case err != nil:
		if ctx.Err() == nil {
			w.Observer.Failed("lease", err)
		}
	case resp.TTL <= 0: // expired or revoked: its keys are being deleted
		delete(known, id)
		w.Sink.ForgetLease(id)
	default:
		w.Sink.SetLeaseExpiry(id, asked.Add(time.Duration(resp.TTL)*time.Second))
	}
}

func toKV(kv *mvccpb.KeyValue) record.KV {
	return record.KV{Key: string(kv.Key), Value: kv.Value, Lease: kv.Lease, Revision: kv.ModRevision}
}
