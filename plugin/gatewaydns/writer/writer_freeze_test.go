package writer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/mirror"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// TestAFrozenEtcdCostsNoName: etcd frozen (SIGSTOP) for 60 s under a writer whose records'
// lease is 20 s: on resume etcd revokes every lease that ran out. The writer, whose keep-alive
// gave up on the lease during the freeze, is elected again and puts its keys on a new lease
// within a second of the resume, and the serve path, which holds keys deleted by a lease's
// expiry for its grace (TestKeysDeletedByTheirLeasesExpiryAreAnsweredForTheGrace), never
// stops answering any of the 500 names, whichever of the revoke and the republish comes
// first. Before, all 500 answered NXDOMAIN from the resume until the writer was elected
// again, 16 s later.
func TestAFrozenEtcdCostsNoName(t *testing.T) {
	c := testenv.StartEtcdCluster(t, 1)
	etcd := c.Members[0]
	cli, err := store.NewClient(store.Config{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	const names = 500
	var eps []record.Endpoint
	for i := range names {
		eps = append(eps, wtEP(wtName(fmt.Sprintf("n%d", i)), fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)))
	}
	w, _ := wtStart(t, cli, writer.Config{Owner: "c1", Desired: wtWant(eps...), Lease: 20 * time.Second, ElectionTTL: 10 * time.Second})
	wtEventually(t, 10*time.Second, "leads", w.IsLeader)

	// The serve path, with its default grace, on a client of its own.
	serve, err := store.NewClient(store.Config{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Close() })
	ix := index.New(index.Options{Prefixes: []string{"/skydns/"}})
	watcher := &mirror.Watcher{Client: serve, Prefix: "/skydns/", Sink: ix, Observer: nopWatchObserver{},
		Log: clog.NewWithPlugin("freeze-test"), Grace: freezeGrace}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); watcher.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	wtEventually(t, 20*time.Second, "every name served", func() bool { return ix.Len() == names })
	lease := wtKeys(t, cli)[record.Key("skydns", wtName("n0"), "c1", "10.0.0.1")].Lease

	etcd.Freeze()
	time.Sleep(60 * time.Second) // the freeze itself: longer than the lease is what is under test
	etcd.Thaw()
	resumed := time.Now()

	// Watch the answers from the resume until the writer has put every key on a new lease.
	fewest, republished := names, time.Duration(0)
	for time.Since(resumed) < 15*time.Second {
		fewest = min(fewest, ix.Len())
		if republished == 0 && wtOnNewLease(t, cli, lease, names) {
			republished = time.Since(resumed)
		}
		if republished > 0 && time.Since(resumed) > republished+mirror.DefaultGrace {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if republished == 0 {
		t.Fatalf("the writer did not republish within 15s of the resume")
	}
	t.Logf("after the resume the writer republished on a new lease within %s; the fewest names served was %d of %d",
		republished.Round(time.Millisecond), fewest, names)
	if fewest != names {
		t.Errorf("%d names went missing after the resume, want none", names-fewest)
	}
	if republished > 3*time.Second {
		t.Errorf("the writer republished %s after the resume, want within 3s", republished.Round(time.Millisecond))
	}
}

// wtOnNewLease reports whether n keys exist, none on lease old.
func wtOnNewLease(t *testing.T, cli *clientv3.Client, old int64, n int) bool {
	t.Helper()
	keys := wtKeys(t, cli)
	if len(keys) != n {
		return false
	}
	for _, kv := range keys {
		if kv.Lease == old || kv.Lease == 0 {
			return false
		}
	}
	return true
}

// nopWatchObserver ignores what a watcher tells.
type nopWatchObserver struct{}

func (nopWatchObserver) Resynced(string, int, time.Duration) {}
func (nopWatchObserver) Applied(int, int)                    {}
func (nopWatchObserver) Heard()                              {}
func (nopWatchObserver) Failed(string, error)                {}
func (nopWatchObserver) Reachable(bool)                      {}

// freezeGrace is the serve path's grace in TestAFrozenEtcdCostsNoName: the default.
var freezeGrace = mirror.DefaultGrace
