package writer_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/tcpproxy"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// wtGauge is a store.Gauge a test reads.
type wtGauge struct{ n atomic.Int64 }

func (g *wtGauge) Inc() { g.n.Add(1) }
func (g *wtGauge) Dec() { g.n.Add(-1) }

// TestAnOutageLeavesNothingBehindAndThePendingChangeLandsWithinTwoSeconds: a leader and a
// standby of one owner, on the product's client through a proxy, ride out an etcd outage,
// refused or black-holed, of any length. Afterwards etcd serves as many watch streams and
// holds as many leases as before (sessions lost in the outage expire, none piles up), the
// process runs as many goroutines give or take a few, and a change made during the outage is
// written within 2 s of etcd answering again, once. Before, a standby's campaign retried
// through an outage could leave a watch stream per retry, and the pending change waited for
// the writer's back-off (up to 30 s) and gRPC's reconnect delay (up to 120 s).
func TestAnOutageLeavesNothingBehindAndThePendingChangeLandsWithinTwoSeconds(t *testing.T) {
	for _, run := range testenv.OutageRuns() {
		t.Run(run.String(), func(t *testing.T) {
			e := testenv.StartEtcd(t)
			p, err := tcpproxy.Start(e.ClientURL[len("http://"):])
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			var streams wtGauge
			cli, err := store.NewClient(store.Config{Endpoints: []string{"http://" + p.Addr}, WatchStreams: &streams})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cli.Close() })
			outage := testenv.Outages(e, p)[run.Kind]

			a, b := wtName("a"), wtName("b")
			d := wtWant(wtEP(a, "10.0.0.1"))
			cfg := writer.Config{Owner: "c1", Desired: d, Lease: 20 * time.Second, ElectionTTL: 5 * time.Second, Identity: "leader"}
			leader, _ := wtStart(t, cli, cfg)
			direct := e.Client(t)
			wtEventually(t, 10*time.Second, "published", wtHostsAre(t, direct, a, "c1=10.0.0.1"))
			cfg.Identity = "standby"
			standby, _ := wtStart(t, cli, cfg)
			// The leader watches its key, the standby the leader's key: a stream each.
			wtEventually(t, 10*time.Second, "two watch streams", func() bool { return streams.n.Load() == 2 })
			before := testenv.TakeLeftovers(t, e)
			rev := wtRevision(t, direct)

			outage.Begin()
			d.set(wtEP(b, "10.0.0.2"))
			leader.Enqueue(b)
			standby.Enqueue(b)
			time.Sleep(run.Length) // the outage itself: its length is what is under test
			outage.End()
			// A client that has not sat out the outage in gRPC's back-off, closed before the
			// counts: its goroutines are the test's.
			fresh, err := clientv3.New(e.ClientConfig(t))
			if err != nil {
				t.Fatal(err)
			}
			back := time.Now()
			wtEventually(t, 10*time.Second, "the change made during the outage written", wtHostsAre(t, fresh, b, "c1=10.0.0.2"))
			if took := time.Since(back); took > 2*time.Second {
				t.Errorf("the change made during the outage was written %s after etcd answered again, want within 2s", took.Round(time.Millisecond))
			} else {
				t.Logf("the change made during the outage was written %s after etcd answered again", took.Round(time.Millisecond))
			}

			for k, kv := range wtKeys(t, fresh) {
				if strings.HasPrefix(k, record.NamePath("skydns", b)+"/") && (kv.Version != 1 || kv.CreateRevision <= rev) {
					t.Errorf("%s: created at revision %d and changed %d times, want put once after revision %d", k, kv.CreateRevision, kv.Version, rev)
				}
			}
			fresh.Close()

			after := testenv.WaitNoLeftovers(t, e, before, 10, 15*time.Second)
			t.Logf("etcd watch streams %d -> %d, leases %d -> %d, goroutines %d -> %d",
				before.Streams, after.Streams, before.Leases, after.Leases, before.Goroutines, after.Goroutines)
			if n := streams.n.Load(); n != 2 {
				t.Errorf("the client counts %d watch streams after the outage, want 2", n)
			}
		})
	}
}

// wtRevision is etcd's revision now.
func wtRevision(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	resp, err := cli.Get(wtCtx(t), "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// TestAMemberFrozenForAMinuteLeavesNothingBehind: with a 3-member etcd, the member under a
// leader and a standby frozen (SIGSTOP) for 60 s and then thawed: a change made during the
// freeze is written by way of the other members, once, and afterwards the members serve as
// many watch streams in all and hold as many leases as before, and the process runs as many
// goroutines give or take a few.
func TestAMemberFrozenForAMinuteLeavesNothingBehind(t *testing.T) {
	c := testenv.StartEtcdCluster(t, 3)
	var streams wtGauge
	cli, err := store.NewClient(store.Config{Endpoints: c.Endpoints(), WatchStreams: &streams})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	direct := c.Client(t)
	a, b := wtName("a"), wtName("b")
	d := wtWant(wtEP(a, "10.0.0.1"))
	cfg := writer.Config{Owner: "c1", Desired: d, Lease: 20 * time.Second, ElectionTTL: 5 * time.Second, Identity: "leader"}
	leader, _ := wtStart(t, cli, cfg)
	wtEventually(t, 10*time.Second, "published", wtHostsAre(t, direct, a, "c1=10.0.0.1"))
	cfg.Identity = "standby"
	standby, _ := wtStart(t, cli, cfg)
	wtEventually(t, 10*time.Second, "two watch streams", func() bool { return streams.n.Load() == 2 })
	var on *testenv.EtcdMember
	most := 0
	for _, m := range c.Members {
		if n, err := m.WatchStreams(5 * time.Second); err == nil && n > most {
			on, most = m, n
		}
	}
	if on == nil {
		t.Fatal("no member serves the writers' watches")
	}
	healthy := c.ClientOfOthers(t, on) // the test reads through the members that stay up
	before := testenv.TakeLeftovers(t, c)
	rev := wtRevision(t, healthy)

	on.Freeze()
	frozen := time.Now()
	d.set(wtEP(b, "10.0.0.2"))
	leader.Enqueue(b)
	standby.Enqueue(b)
	wtEventually(t, 10*time.Second, "the change made during the freeze written", wtHostsAre(t, healthy, b, "c1=10.0.0.2"))
	t.Logf("the change made during the freeze of %s was written after %s", on.Name, time.Since(frozen).Round(time.Millisecond))
	time.Sleep(60*time.Second - time.Since(frozen)) // the freeze itself: its length is what is under test
	on.Thaw()

	for k, kv := range wtKeys(t, healthy) {
		if strings.HasPrefix(k, record.NamePath("skydns", b)+"/") && (kv.Version != 1 || kv.CreateRevision <= rev) {
			t.Errorf("%s: created at revision %d and changed %d times, want put once after revision %d", k, kv.CreateRevision, kv.Version, rev)
		}
	}
	after := testenv.WaitNoLeftovers(t, c, before, 10, 20*time.Second)
	if n := streams.n.Load(); n != 2 {
		t.Errorf("the client counts %d watch streams after the thaw, want 2", n)
	}
	t.Logf("member %s frozen 60 s: watch streams %d -> %d, leases %d -> %d, goroutines %d -> %d",
		on.Name, before.Streams, after.Streams, before.Leases, after.Leases, before.Goroutines, after.Goroutines)
}
