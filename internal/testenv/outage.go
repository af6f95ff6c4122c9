package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/gatewaydns/gatewaydns/internal/promtext"
	"github.com/gatewaydns/gatewaydns/internal/tcpproxy"
)

// WatchStreams returns the number of watch streams etcd serves (its
// etcd_debugging_mvcc_watch_stream_total gauge): what an outage must leave as it found.
func (e *Etcd) WatchStreams(timeout time.Duration) (int, error) {
	return watchStreams(e.ClientURL, timeout)
}

// Watchers returns the number of watches etcd serves (its etcd_debugging_mvcc_watcher_total
// gauge), over all streams: what a client's watches cost etcd.
func (e *Etcd) Watchers(timeout time.Duration) (int, error) {
	return etcdGauge(e.ClientURL, "etcd_debugging_mvcc_watcher_total", timeout)
}

func watchStreams(clientURL string, timeout time.Duration) (int, error) {
	return etcdGauge(clientURL, "etcd_debugging_mvcc_watch_stream_total", timeout)
}

// etcdGauge reads the gauge name from the /metrics of the etcd at clientURL.
func etcdGauge(clientURL, name string, timeout time.Duration) (int, error) {
	body, err := promtext.Scrape(&http.Client{Timeout: timeout}, clientURL+"/metrics")
	if err != nil {
		return 0, err
	}
	v, ok := promtext.Value(body, name)
	if !ok {
		return 0, fmt.Errorf("no %s in /metrics", name)
	}
	return int(v), nil
}

// An Outage is one way etcd stops answering a client that reaches it through a proxy: Begin
// starts it, End ends it and returns once etcd answers again.
type Outage struct {
	Name       string
	Begin, End func()
}

// Outages are the two ways etcd goes away: refused (the process killed, then restarted on
// its data: connections reset, dials refused) and black-holed (a proxy that stops passing
// anything on: connections stay open and nothing comes back, as from a frozen host).
func Outages(e *Etcd, p *tcpproxy.Proxy) []Outage {
	return []Outage{
		{Name: "refused", Begin: e.Kill, End: e.Restart},
		{Name: "black-holed", Begin: p.BlackHole, End: p.Restore},
	}
}

// An OutageRun is one outage a test rides out: which of Outages (by index) and how long.
type OutageRun struct {
	Kind   int
	Length time.Duration
}

func (r OutageRun) String() string {
	return fmt.Sprintf("%s %s", []string{"refused", "black-holed"}[r.Kind], r.Length)
}

// OutageRuns are the outages a test rides out: refused and black-holed for 10 s, refused for
// 60 s (the case that left a stream per retry); with GATEWAYDNS_SOAK=1 (make soak) black-holed
// for 60 s too, and both for 300 s. make test stays within its time that way.
func OutageRuns() []OutageRun {
	runs := []OutageRun{{0, 10 * time.Second}, {1, 10 * time.Second}, {0, 60 * time.Second}}
	if os.Getenv("GATEWAYDNS_SOAK") == "1" {
		runs = append(runs, OutageRun{1, 60 * time.Second}, OutageRun{0, 300 * time.Second}, OutageRun{1, 300 * time.Second})
	}
	return runs
}

// Leftovers are what a test compares before and after something that must leave nothing
// behind: etcd's watch streams and the process's goroutines.
type Leftovers struct {
	Streams, Leases, Goroutines int
}

// Store is an etcd or an etcd cluster, as far as leftovers go.
type Store interface {
	WatchStreams(timeout time.Duration) (int, error)
	ClientConfig(t testing.TB) clientv3.Config
}

// WatchStreams is the sum of every member's watch streams.
func (c *EtcdCluster) WatchStreams(timeout time.Duration) (int, error) {
	total := 0
	for _, m := range c.Members {
		n, err := m.WatchStreams(timeout)
		if err != nil {
			return 0, fmt.Errorf("member %s: %w", m.Name, err)
		}
		total += n
	}
	return total, nil
}

// ClientConfig is a plain client's configuration with every member's endpoint.
func (c *EtcdCluster) ClientConfig(testing.TB) clientv3.Config {
	return clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
}

// TakeLeftovers reads them now: etcd's watch streams and leases, and the goroutines.
func TakeLeftovers(t testing.TB, e Store) Leftovers {
	t.Helper()
	n, err := e.WatchStreams(5 * time.Second)
	if err != nil {
		t.Fatalf("reading etcd's watch streams: %v", err)
	}
	goroutines := runtime.NumGoroutine()
	cli, err := clientv3.New(e.ClientConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	leases, err := cli.Leases(ctx)
	if err != nil {
		t.Fatalf("listing etcd's leases: %v", err)
	}
	return Leftovers{Streams: n, Leases: len(leases.Leases), Goroutines: goroutines}
}

// WaitNoLeftovers waits up to within for etcd's watch streams and leases to equal before's
// (a lease of a session lost in the outage may live out its TTL) and for the
// goroutines to be within slack of before's, and fails the test with both counts otherwise.
// Streams end asynchronously on etcd's side and goroutines as their connections close, so the
// counts are waited for, not read once.
func WaitNoLeftovers(t testing.TB, e Store, before Leftovers, slack int, within time.Duration) Leftovers {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		now := TakeLeftovers(t, e)
		if now.Streams == before.Streams && now.Leases == before.Leases && now.Goroutines <= before.Goroutines+slack {
			return now
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: etcd serves %d watch streams (%d before) and holds %d leases (%d before), the process runs %d goroutines (%d before, %d allowed)",
				within, now.Streams, before.Streams, now.Leases, before.Leases, now.Goroutines, before.Goroutines, before.Goroutines+slack)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
