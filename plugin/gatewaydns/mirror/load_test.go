package mirror

import (
	"context"
	"sync/atomic"
	"testing"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// streamKV counts the range streams asked for; with old set it is the KV of an etcd before 3.7,
// which does not know RangeStream.
type streamKV struct {
	clientv3.KV
	old     bool
	streams atomic.Int32
}

func (k *streamKV) GetStream(ctx context.Context, key string, opts ...clientv3.OpOption) (clientv3.GetStreamChan, error) {
	k.streams.Add(1)
	if k.old {
		return nil, status.Error(codes.Unimplemented, "unknown method RangeStream for service etcdserverpb.KV")
	}
	return k.KV.GetStream(ctx, key, opts...)
}

// A load reads every key at one revision whether etcd streams the range or, before 3.7, not:
// then in pages, having asked once.
func TestLoadReadsEveryKeyStreamedOrInPages(t *testing.T) {
	e := newEnv(t)
	e.put(t, 0, 300)
	for _, stream := range []bool{true, false} {
		cfg := e.etcd.ClientConfig(t)
		cli, err := clientv3.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cli.Close() })
		kv := &streamKV{KV: cli.KV, old: !stream}
		cli.KV = kv
		ix := newIndex()
		w := &Watcher{Client: cli, Prefix: prefix, Sink: ix, Observer: &observer{}, Log: clog.NewWithPlugin("mirror-test")}
		for range 2 {
			rev, _, err := w.load(context.Background(), "test")
			if err != nil {
				t.Fatalf("stream %v: %v", stream, err)
			}
			if got, want := ix.Revision("x.test."), rev; got > want || ix.Len() != 300 {
				t.Fatalf("stream %v: %d keys at serial %d, want 300 read at %d", stream, ix.Len(), got, want)
			}
			if d, _ := ix.Digest(prefix); d != e.etcdDigest(t) {
				t.Fatalf("stream %v: index %+v, etcd %+v", stream, d, e.etcdDigest(t))
			}
		}
		if want := map[bool]int32{true: 2, false: 1}[stream]; kv.streams.Load() != want {
			t.Fatalf("stream %v: asked to stream %d times, want %d", stream, kv.streams.Load(), want)
		}
	}
}
