package mirror

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

// load reads every key under the prefix at one revision, a part at a time, and hands each part
// to the Sink's load as it comes, so that the keys are never all in memory at once. Each part
// has its own time limit, so a black-holed etcd fails it rather than hang it. It returns the
// revision read and the newest key's mod revision: the changes between the two are deletes the
// load cannot show, which the session replays for the serial (index/serial.go).
func (w *Watcher) load(ctx context.Context, reason string) (rev, newest int64, err error) {
	start := time.Now()
	loading := w.Sink.StartLoad(w.Prefix)
	if reason == reasonNewStore {
		loading.NewStore() // no IXFR across it (index/newstore.go)
	}
	var kvs []record.KV
	var leases []int64
	keys := 0
	rev, err = w.pages(ctx, 0, false, func(resp *clientv3.GetResponse) {
		kvs = kvs[:0]
		for _, kv := range resp.Kvs {
			kvs = append(kvs, record.KV{Key: string(kv.Key), Value: kv.Value, Lease: kv.Lease, Revision: kv.ModRevision, Created: kv.CreateRevision})
			newest = max(newest, kv.ModRevision)
			if kv.Lease != 0 {
				leases = append(leases, kv.Lease)
			}
		}
		keys += len(kvs)
		loading.Add(kvs)
	})
	if err != nil {
		loading.Abort()
		return 0, 0, err
	}
	loading.Finish(rev)
	w.noteLeases(leases)
	w.Observer.Heard()
	w.Observer.Resynced(reason, keys, time.Since(start))
	w.Log.Infof("Loaded %d keys of %s at revision %d in %s", keys, w.Prefix, rev, time.Since(start).Round(time.Millisecond))
	return rev, newest, nil
}

// pages reads the prefix at rev (0: the current revision) and hands what it reads to page, a
// part at a time; it returns the revision read. It streams the range (readStream) where etcd
// can, and reads it in pages (store.ReadPages) where it cannot.
func (w *Watcher) pages(ctx context.Context, rev int64, keysOnly bool, page func(*clientv3.GetResponse)) (int64, error) {
	var opts []clientv3.OpOption
	if keysOnly {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	if !w.noStream.Load() {
		read, err := readStream(ctx, w.Client, w.Prefix, rev, w.answered, page, opts...)
		if status.Code(err) != codes.Unimplemented {
			return read, err
		}
		w.noStream.Store(true)
		w.Log.Infof("etcd does not stream ranges (RangeStream, etcd 3.7): reading %s in pages", w.Prefix)
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

// readStream reads every key under prefix at rev (0: the current revision) with etcd's
// RangeStream, which sends the range in parts of about a request's size. A paged read asks
// etcd for each page to count the keys left after it: reading a million keys in pages of
// 5000 took etcd 17 s, streaming them well under 2. Each part must come within
// requestTimeout, so a black-holed etcd fails the read rather than hang it. An etcd before
// 3.7 fails it at once with codes.Unimplemented.
func readStream(ctx context.Context, kv clientv3.KV, prefix string, rev int64, answered func(), page func(*clientv3.GetResponse), extra ...clientv3.OpOption) (int64, error) {
	// The open is bounded too: it waits for a connection to etcd, for ever when there is none,
	// and a server that never reached etcd never said why. A connection is given as long as a
	// dial may take (store's connect timeout); each part then requestTimeout.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	noConnection := fmt.Errorf("no connection within %s", openTimeout)
	opening := time.AfterFunc(openTimeout, func() { cancel(noConnection) })
	opts := append([]clientv3.OpOption{clientv3.WithPrefix()}, extra...)
	if rev != 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	parts, err := kv.GetStream(ctx, prefix, opts...)
	opening.Stop()
	if err != nil {
		if cause := context.Cause(ctx); cause == noConnection {
			err = fmt.Errorf("%w: %w", cause, err)
		}
		return 0, fmt.Errorf("reading %s at revision %d: %w", prefix, rev, err)
	}
	defer func() {
		cancel(nil)
		for range parts { // the client's receiving goroutine ends once it has sent what it has
		}
	}()
	noAnswer := fmt.Errorf("no answer within %s", requestTimeout)
	bound := time.AfterFunc(requestTimeout, func() { cancel(noAnswer) })
	defer bound.Stop()
	for {
		select {
		case part, ok := <-parts:
			switch {
			case !ok:
				return 0, fmt.Errorf("reading %s at revision %d: the stream ended without its last part", prefix, rev)
			case part.Err() != nil:
				return 0, fmt.Errorf("reading %s at revision %d: %w", prefix, rev, part.Err())
			}
			answered()
			page((*clientv3.GetResponse)(part.RangeResponse))
			if part.Header != nil { // only the last part has one
				return part.Header.Revision, nil
			}
			bound.Reset(requestTimeout)
		case <-ctx.Done():
			if cause := context.Cause(ctx); cause == noAnswer || cause == noConnection {
				return 0, fmt.Errorf("reading %s at revision %d: %w", prefix, rev, cause)
			}
			return 0, ctx.Err()
		}
	}
}
