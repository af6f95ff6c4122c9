package mirror

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

// load reads every key under the prefix at one revision, in pages, and hands them to the Sink.
// Each page has its own time limit, so a black-holed etcd fails it rather than hang it. It
// returns the revision read and the newest key's mod revision: the changes between the two
// are deletes the load cannot show, which the session replays for the serial (index/serial.go).
func (w *Watcher) load(ctx context.Context, reason string) (rev, newest int64, err error) {
	start := time.Now()
	var kvs []record.KV
	rev, err = w.pages(ctx, 0, false, func(resp *clientv3.GetResponse) {
		for _, kv := range resp.Kvs {
			kvs = append(kvs, record.KV{Key: string(kv.Key), Value: kv.Value, Lease: kv.Lease, Revision: kv.ModRevision, Created: kv.CreateRevision})
			newest = max(newest, kv.ModRevision)
		}
	})
	if err != nil {
		return 0, 0, err
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
	return rev, newest, nil
}

// pages reads the prefix at rev (0: the current revision, then that one for every page), in
// pages (store.ReadPages), each request under its own time limit, so that a black-holed etcd
// fails it rather than hang it; it returns the revision read.
func (w *Watcher) pages(ctx context.Context, rev int64, keysOnly bool, page func(*clientv3.GetResponse)) (int64, error) {
	var opts []clientv3.OpOption
	if keysOnly {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	get := func(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		resp, err := w.Client.Get(rctx, key, opts...)
		if err == nil {
			w.answered()
		}
		return resp, err
	}
	return store.ReadPages(ctx, get, w.Prefix, rev, page, opts...)
}
