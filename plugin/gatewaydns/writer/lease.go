package writer

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// LeaseMargin is how much longer than the election TTL the records' lease must be: after a
// leader's process is gone its election key lives up to the election TTL, and its successor
// then needs a few round trips to find the records' lease and keep it alive.
const LeaseMargin = 5 * time.Second

// CheckLease refuses a records' lease that could expire before a successor takes the records
// over: shorter than the election TTL (DefaultElectionTTL when 0) plus LeaseMargin. A lease of 0
// (no lease) is fine.
func CheckLease(lease, electionTTL time.Duration) error {
	if lease <= 0 {
		return nil
	}
	if electionTTL <= 0 {
		electionTTL = DefaultElectionTTL
	}
	if least := electionTTL + LeaseMargin; lease < least {
		return fmt.Errorf("lease %v is shorter than the election TTL %v plus %v: records would expire before a successor takes them over; use at least %v",
			lease, electionTTL, LeaseMargin, least)
	}
	return nil
}

func (w *Writer) leaseTTL() int64 { return max(int64((w.cfg.Lease+time.Second-1)/time.Second), 1) }

// takeLease finds the records' lease and keeps it alive until ctx ends; lost is closed when
// the keep-alive stops. The lease belongs to the records, not to a term: a successor adopts
// the lease its predecessor's keys are on (so a failover with nothing changed writes nothing)
// when etcd says it is alive and of the configured TTL, and grants a new one otherwise. It is
// never revoked: the records outlive the writer by the lease's TTL.
func (w *Writer) takeLease(ctx context.Context) (clientv3.LeaseID, <-chan struct{}, error) {
	id, err := w.adoptableLease(ctx)
	if err != nil {
		return 0, nil, err
	}
	if id == 0 {
		var resp *clientv3.LeaseGrantResponse
		err := w.request(ctx, func(ctx context.Context) (err error) {
			resp, err = w.client.Grant(ctx, w.leaseTTL())
			return err
		})
		if err != nil {
			return 0, nil, fmt.Errorf("granting the records' lease: %w", err)
		}
		id = resp.ID
	}
	// Ended with ctx (the term): the lease itself is never revoked.
	alive, _ := keepAlive(ctx, w.client, w.cfg.Members, id, time.Duration(w.leaseTTL())*time.Second, w.cfg.AttemptTimeout)
	return id, alive.Done(), nil
}

// adoptableLease is the lease most of this owner's keys are on, when it is alive and of the
// configured TTL; 0 when there is none.
func (w *Writer) adoptableLease(ctx context.Context) (clientv3.LeaseID, error) {
	own, _, _, err := w.scanOwn(ctx)
	if err != nil {
		return 0, fmt.Errorf("finding the records' lease: %w", err)
	}
	count := make(map[clientv3.LeaseID]int)
	var best clientv3.LeaseID
	for _, k := range own {
		id := clientv3.LeaseID(k.lease)
		if id == 0 {
			continue
		}
		count[id]++
		if count[id] > count[best] {
			best = id
		}
	}
	if best == 0 {
		return 0, nil
	}
	var resp *clientv3.LeaseTimeToLiveResponse
	err = w.request(ctx, func(ctx context.Context) (err error) {
		resp, err = w.client.TimeToLive(ctx, best)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("reading the records' lease %x: %w", best, err)
	}
	// TTL -1: expired or revoked. Another granted TTL: the configuration changed; a new lease
	// (and the puts that move the keys to it) applies it.
	if resp.TTL <= 0 || resp.GrantedTTL != w.leaseTTL() {
		return 0, nil
	}
	return best, nil
}
