package mirror

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/tcpproxy"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

const prefix = "/skydns/test/"

// observer records what the watcher tells it.
type observer struct {
	heard, puts, deletes atomic.Int64

	mu        sync.Mutex
	resyncs   []string
	failures  []string
	firstFail time.Time
	reachable []bool
}

func (o *observer) Resynced(reason string, _ int, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.resyncs = append(o.resyncs, reason)
}
func (o *observer) Applied(p, d int) { o.puts.Add(int64(p)); o.deletes.Add(int64(d)) }
func (o *observer) Heard()           { o.heard.Add(1) }
func (o *observer) Failed(op string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.firstFail.IsZero() {
		o.firstFail = time.Now()
	}
	o.failures = append(o.failures, op+": "+err.Error())
}
func (o *observer) Reachable(up bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reachable = append(o.reachable, up)
}

func (o *observer) resyncReasons() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.resyncs...)
}

func (o *observer) reach() []bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]bool(nil), o.reachable...)
}

// env is an etcd, a proxy in front of it, a client through the proxy for the watcher, and a
// direct one for the test's writes.
type env struct {
	etcd   *testenv.Etcd
	proxy  *tcpproxy.Proxy
	direct *clientv3.Client
	viaCut *clientv3.Client
	// streams are viaCut's watch streams as the client counts them (store.Config.WatchStreams).
	streams gauge
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := testenv.StartEtcd(t)
	p, err := tcpproxy.Start(strings.TrimPrefix(e.ClientURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	en := &env{etcd: e, proxy: p, direct: e.Client(t)}
	// The product's client, as the serve role makes it (reconnects, counted streams).
	c, err := store.NewClient(store.Config{Endpoints: []string{"http://" + p.Addr}, WatchStreams: &en.streams})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	en.viaCut = c
	return en
}

// gauge is a store.Gauge a test reads.
type gauge struct{ n atomic.Int64 }

func (g *gauge) Inc()       { g.n.Add(1) }
func (g *gauge) Dec()       { g.n.Add(-1) }
func (g *gauge) get() int64 { return g.n.Load() }

// start runs a watcher of prefix into ix until the test ends; it waits for the first load.
func (e *env) start(t *testing.T, sink Sink, ix *index.Index, tune func(*Watcher)) (*observer, *Watcher) {
	t.Helper()
	o := &observer{}
	w := &Watcher{Client: e.viaCut, Prefix: prefix, Sink: sink, Observer: o, Log: clog.NewWithPlugin("mirror-test")}
	if tune != nil {
		tune(w)
	}
	runUntilEnd(t, w.Run, nil)
	waitFor(t, 10*time.Second, "first load", func() bool { return ix.Loaded() })
	return o, w
}

// runUntilEnd runs run until the test ends: its cleanup cancels run's context, fails the test
// when run has not returned 5 s later, and then calls after (nil: nothing).
func runUntilEnd(t *testing.T, run func(context.Context), after func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return within 5s of cancel")
		}
		if after != nil {
			after()
		}
	})
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// etcdDigest is the digest of etcd's keys under prefix now, and how many there are.
func (e *env) etcdDigest(t *testing.T) index.Digest { return clusterDigest(t, e.direct) }

// clusterDigest is the digest of the keys under prefix that cli reads now.
func clusterDigest(t *testing.T, cli *clientv3.Client) index.Digest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var d index.Digest
	for _, kv := range resp.Kvs {
		d.Add(string(kv.Key), kv.ModRevision)
	}
	return d
}

// waitEqual waits until the index holds exactly etcd's keys, at their revisions, all served.
func (e *env) waitEqual(t *testing.T, ix *index.Index, within time.Duration) {
	t.Helper()
	var got, want index.Digest
	deadline := time.Now().Add(within)
	for {
		got, _ = ix.Digest(prefix)
		want = e.etcdDigest(t)
		if got == want && ix.Len() == want.Keys {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("index %+v (%d served) never equalled etcd %+v within %s", got, ix.Len(), want, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// put writes n keys from first on, concurrently, each in its own revision.
func (e *env) put(t *testing.T, first, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := first + w; i < first+n; i += 16 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := e.direct.Put(ctx, fmt.Sprintf("%sk/%d", prefix, i), fmt.Sprintf(`{"host":"10.0.%d.%d"}`, i/250%250, i%250+1))
				cancel()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

func newIndex() *index.Index { return index.New(index.Options{Prefixes: []string{prefix}}) }
