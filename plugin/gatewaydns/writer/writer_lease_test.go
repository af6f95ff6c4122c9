package writer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

func TestCheckLease(t *testing.T) {
	cases := []struct {
		name         string
		lease, elTTL time.Duration
		ok           bool
	}{
		{"no lease", 0, 0, true},
		{"default election TTL plus the margin", writer.DefaultElectionTTL + writer.LeaseMargin, 0, true},
		{"just below the default election TTL plus the margin", writer.DefaultElectionTTL + writer.LeaseMargin - time.Second, 0, false},
		{"shorter than the election TTL", 5 * time.Second, 10 * time.Second, false},
		{"equal to the election TTL", 10 * time.Second, 10 * time.Second, false},
		{"short election TTL", 6 * time.Second, time.Second, true},
		{"long lease", time.Hour, 30 * time.Second, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := writer.CheckLease(tc.lease, tc.elTTL)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckLease(%v, %v) = %v, want ok=%v", tc.lease, tc.elTTL, err, tc.ok)
			}
			_, nerr := writer.New(nil, writer.Config{Owner: "c1", Desired: wtWant(), Lease: tc.lease, ElectionTTL: tc.elTTL})
			if (nerr == nil) != tc.ok {
				t.Fatalf("New with lease %v, election TTL %v: %v, want ok=%v", tc.lease, tc.elTTL, nerr, tc.ok)
			}
		})
	}
}

// wtCountPuts counts the puts under the records' root from rev on, until stop is called.
func wtCountPuts(t *testing.T, cli *clientv3.Client, rev int64) (count func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch := make(chan int, 1)
	ch <- 0
	wc := cli.Watch(ctx, "/skydns/", clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithFilterDelete())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for resp := range wc {
			n := <-ch
			ch <- n + len(resp.Events)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() int { n := <-ch; ch <- n; return n }
}

// TestWriterFailoverAdoptsLease: a successor adopts the records' lease: a failover with nothing
// changed writes nothing, and the records outlive their first writer.
func TestWriterFailoverAdoptsLease(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	names := []string{wtName("a"), wtName("b"), wtName("c")}
	d := wtWant(wtEP(names[0], "10.0.0.1"), wtEP(names[1], "10.0.0.2", "10.0.0.3"), wtEP(names[2], "10.0.0.4"))
	const lease = 6 * time.Second
	cfg := writer.Config{Owner: "c1", Desired: d, Lease: lease, ElectionTTL: time.Second}
	first, stopFirst := wtStart(t, e.Client(t), cfg)
	wtEventually(t, 10*time.Second, "first leads", first.IsLeader)
	wtEventually(t, 10*time.Second, "published", wtHostsAre(t, cli, names[1], "c1=10.0.0.2", "c1=10.0.0.3"))
	before := wtKeys(t, cli)
	if len(before) != 4 {
		t.Fatalf("%d keys, want 4", len(before))
	}
	var leaseID int64
	var maxRev int64
	for k, kv := range before {
		if kv.Lease == 0 || (leaseID != 0 && kv.Lease != leaseID) {
			t.Fatalf("%s on lease %x; want every key on one lease", k, kv.Lease)
		}
		leaseID = kv.Lease
		maxRev = max(maxRev, kv.ModRevision)
	}
	puts := wtCountPuts(t, cli, maxRev+1)

	obs := &wtObserver{}
	cfg.Observer = obs
	second, _ := wtStart(t, e.Client(t), cfg)
	stopFirst()
	stopped := time.Now()
	wtEventually(t, 10*time.Second, "the successor leads and resyncs", func() bool { return second.IsLeader() && obs.syncCount() > 0 })
	if n := puts(); n != 0 {
		t.Fatalf("failover with nothing changed put %d key(s), want 0", n)
	}
	// The predecessor no longer keeps the lease alive: the successor does, past its TTL.
	wtEventually(t, lease+5*time.Second, "records alive past the lease TTL after the first writer stopped", func() bool {
		if time.Since(stopped) < lease+time.Second {
			return false
		}
		ttl, err := cli.TimeToLive(wtCtx(t), clientv3.LeaseID(leaseID))
		return err == nil && ttl.TTL > 0 && len(wtKeys(t, cli)) == 4
	})
	if n := puts(); n != 0 {
		t.Fatalf("%d put(s) while nothing changed", n)
	}
}

// TestWriterGrantsWhenLeaseGone: a successor whose predecessor's lease expired grants a new one
// and puts the records on it.
func TestWriterGrantsWhenLeaseGone(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	app := wtName("app")
	ep := wtEP(app, "10.0.0.1")
	k := record.Key("skydns", app, "c1", "10.0.0.1")
	old, err := cli.Grant(wtCtx(t), 6)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(wtCtx(t), k, string(record.NewValue(ep, "c1", "10.0.0.1").Encode()), clientv3.WithLease(old.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(wtCtx(t), old.ID); err != nil {
		t.Fatal(err)
	}
	wtStart(t, cli, writer.Config{Owner: "c1", Desired: wtWant(ep), Lease: 6 * time.Second, ElectionTTL: time.Second})
	wtEventually(t, 10*time.Second, "republished on a live lease", func() bool {
		kv := wtKeys(t, cli)[k]
		if kv == nil || kv.Lease == 0 || kv.Lease == int64(old.ID) {
			return false
		}
		ttl, err := cli.TimeToLive(wtCtx(t), clientv3.LeaseID(kv.Lease))
		return err == nil && ttl.TTL > 0
	})
}

// TestWriterCreateOnlyLeaseKeepsKeysAlive: with create-only and a lease, keys of a dead lease
// move to the live one, their values untouched, so they do not expire with it.
func TestWriterCreateOnlyLeaseKeepsKeysAlive(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	app := wtName("app")
	k := record.Key("skydns", app, "c1", "10.0.0.1")
	// The key as an earlier writer created it, on a lease of another TTL (not adopted), with
	// a TTL the sources no longer want (create-only keeps it).
	oldEP := wtEP(app, "10.0.0.1")
	oldEP.TTL = 99
	oldValue := string(record.NewValue(oldEP, "c1", "10.0.0.1").Encode())
	old, err := cli.Grant(wtCtx(t), 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(wtCtx(t), k, oldValue, clientv3.WithLease(old.ID)); err != nil {
		t.Fatal(err)
	}
	obs := &wtObserver{}
	wtStart(t, cli, writer.Config{Owner: "c1", Desired: wtWant(wtEP(app, "10.0.0.1")), Observer: obs,
		Policy: plan.CreateOnly, Lease: 6 * time.Second, ElectionTTL: time.Second})
	wtEventually(t, 10*time.Second, "synced", func() bool { return obs.syncCount() > 0 })
	kv := wtKeys(t, cli)[k]
	if kv == nil || kv.Lease == int64(old.ID) || kv.Lease == 0 {
		t.Fatalf("key after the resync: %v, want it on the writer's lease (old %x)", kv, old.ID)
	}
	if string(kv.Value) != oldValue {
		t.Fatalf("create-only changed the value: %s", kv.Value)
	}
	// The old lease ends (its writer is gone): the key stays.
	if _, err := cli.Revoke(wtCtx(t), old.ID); err != nil {
		t.Fatal(err)
	}
	if kv := wtKeys(t, cli)[k]; kv == nil || !strings.Contains(string(kv.Value), "99") {
		t.Fatalf("key gone with the old lease: %v", kv)
	}
}
