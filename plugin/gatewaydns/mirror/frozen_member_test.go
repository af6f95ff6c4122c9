package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

// TestAMemberFrozenForAMinuteLeavesNothingBehind: with a 3-member etcd, the member the watch
// is on frozen (SIGSTOP) for 60 s and then thawed: the watch moves to another member within
// seconds, and afterwards the members serve as many watch streams in all as before, the
// process runs as many goroutines give or take a few, and each change is applied once.
func TestAMemberFrozenForAMinuteLeavesNothingBehind(t *testing.T) {
	c := testenv.StartEtcdCluster(t, 3)
	direct := c.Client(t)
	var streams gauge
	cli, err := store.NewClient(store.Config{Endpoints: c.Endpoints(), WatchStreams: &streams})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	ix := newIndex()
	o := &observer{}
	w := &Watcher{Client: cli, Prefix: prefix, Sink: ix, Observer: o, Log: clog.NewWithPlugin("mirror-test")}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, 10*time.Second, "first load", ix.Loaded)

	// A put made while the frozen member led raft may time out ("request timed out") and is
	// made again, as a client would, until the others have elected a leader; only if the key
	// is still absent, so that a put that was applied after all is not counted twice.
	put := func(i int) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		key := fmt.Sprintf("%sk/%d", prefix, i)
		for {
			pctx, pcancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := direct.Txn(pctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
				Then(clientv3.OpPut(key, fmt.Sprintf(`{"host":"10.0.0.%d"}`, i%250+1))).Commit()
			pcancel()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("put %d: %v", i, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	put(0)
	waitFor(t, 10*time.Second, "the first record", func() bool { return ix.Len() == 1 })
	var on *testenv.EtcdMember
	for _, m := range c.Members {
		if n, err := m.WatchStreams(5 * time.Second); err == nil && n > 0 {
			on = m
		}
	}
	if on == nil {
		t.Fatal("no member serves the watch")
	}
	direct = c.ClientOfOthers(t, on) // the test writes through the members that stay up
	before := testenv.TakeLeftovers(t, c)
	putsBefore := o.puts.Load()

	on.Freeze()
	put(1)
	waitFor(t, 5*time.Second, "the change made after the freeze, from another member", func() bool { return ix.Len() == 2 })
	time.Sleep(60 * time.Second) // the freeze itself: its length is what is under test
	on.Thaw()
	for i := 2; i < 52; i++ {
		put(i)
	}
	waitFor(t, 10*time.Second, "the changes after the thaw", func() bool { return ix.Len() == 52 })
	if got := o.puts.Load() - putsBefore; got != 51 {
		t.Errorf("the 51 puts from the freeze on were applied %d times, want each once", got)
	}
	onlyStart(t, o)
	after := testenv.WaitNoLeftovers(t, c, before, 10, 15*time.Second)
	if n := streams.get(); n != 1 {
		t.Errorf("the client counts %d watch streams after the thaw, want 1", n)
	}
	t.Logf("member %s frozen 60 s: watch streams %d -> %d, goroutines %d -> %d", on.Name, before.Streams, after.Streams, before.Goroutines, after.Goroutines)
}
