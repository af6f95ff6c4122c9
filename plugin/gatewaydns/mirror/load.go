package mirror

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// load reads every key under the prefix at one revision, in pages, and hands them to the Sink.
// Each page has its own time limit, so a black-holed etcd fails it rather than hang it.
func (w *Watcher) load(ctx context.Context, reason string) (int64, error) {
	start := time.Now()
	var kvs []record.KV
	rev, err := w.pages(ctx, 0, false, func(resp *clientv3.GetResponse) {
		for _, kv := range resp.Kvs {
			kvs = append(kvs, record.KV{Key: string(kv.Key), Value: kv.Value, Lease: kv.Lease, Revision: kv.ModRevision, Created: kv.CreateRevision})
		}
	})
	if err != nil {
		return 0, err
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

// pages reads the prefix at rev (0: the current revision, then that one for every page), in
// pages of pageSize, handing each response to page; it returns the revision read.
func (w *Watcher) pages(ctx context.Context, rev int64, keysOnly bool, page func(*clientv3.GetResponse)) (int64, error) {
	from, end := w.Prefix, clientv3.GetPrefixRangeEnd(w.Prefix)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(pageSize)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		if keysOnly {
			opts = append(opts, clientv3.WithKeysOnly())
		}
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		resp, err := w.Client.Get(rctx, from, opts...)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("reading %s at revision %d: %w", w.Prefix, rev, err)
		}
		w.answered()
		if rev == 0 {
			rev = resp.Header.Revision
		}
		page(resp)
		if !resp.More || len(resp.Kvs) == 0 {
			return rev, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}
