package main

import (
	"context"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// txnOps is etcd's default --max-txn-ops.
const txnOps = 128

// loadRecords puts the records into etcd in transactions of txnOps puts, workers at a time.
func loadRecords(ctx context.Context, cli *clientv3.Client, recs []kv, workers int) error {
	batches := make(chan []kv)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				ops := make([]clientv3.Op, len(b))
				for i, r := range b {
					ops[i] = clientv3.OpPut(r.Key, r.Value)
				}
				if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
					errs <- fmt.Errorf("etcd: putting %d records from %s: %w", len(b), b[0].Key, err)
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := 0; i < len(recs); i += txnOps {
		select {
		case batches <- recs[i:min(i+txnOps, len(recs))]:
		case err = <-errs:
			break feed
		}
	}
	close(batches)
	wg.Wait()
	close(errs)
	if err != nil {
		return err
	}
	return <-errs // nil when the channel is empty
}

// clearPrefix deletes every key under prefix.
func clearPrefix(ctx context.Context, cli *clientv3.Client, prefix string) error {
	if _, err := cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("etcd: deleting %s: %w", prefix, err)
	}
	return nil
}

// countPrefix counts the keys under prefix.
func countPrefix(ctx context.Context, cli *clientv3.Client, prefix string) (int64, int64, error) {
	r, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, 0, fmt.Errorf("etcd: counting %s: %w", prefix, err)
	}
	return r.Count, r.Header.Revision, nil
}

// etcdQuota is the bench etcd's --quota-backend-bytes.
const etcdQuota = 8 << 30

// dbSize is the size of the bench etcd's database file, and how much of it is in use.
func (h *harness) dbSize(ctx context.Context) (size, inUse int64, err error) {
	st, err := h.cli.Status(ctx, h.etcd.ClientURL)
	if err != nil {
		return 0, 0, fmt.Errorf("etcd: status: %w", err)
	}
	return st.DbSize, st.DbSizeInUse, nil
}
