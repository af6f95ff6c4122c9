package mirror

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

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
		if !w.leaseHeld(id) { // a held key's lease is forgotten when its hold ends
			w.Sink.ForgetLease(id)
		}
	default:
		w.Sink.SetLeaseExpiry(id, asked.Add(time.Duration(resp.TTL)*time.Second))
	}
}
