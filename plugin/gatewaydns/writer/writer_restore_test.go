package writer_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// wtConnect is the publish role's client of c: with its Members, run until the test ends.
func wtConnect(t *testing.T, c *testenv.EtcdCluster) (*clientv3.Client, *store.Members) {
	t.Helper()
	cli, m, err := store.Connect(store.Config{Endpoints: c.Endpoints()}, clog.NewWithPlugin("writer-test"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		cli.Close()
	})
	return cli, m
}

// wtOwnedNames is the names with a key of owner, sorted.
func wtOwnedNames(t *testing.T, cli *clientv3.Client, owner string) []string {
	t.Helper()
	var names []string
	for k, kv := range wtKeys(t, cli) {
		if record.OwnerOf(kv.Value) != owner {
			continue
		}
		if n, ok := record.RecordName("skydns", k); ok && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// TestAWriterPlansEverythingAgainWhenEtcdIsRestored: a leader on a 3-member etcd that is
// restored from a snapshot, plain and with --bump-revision --mark-compacted. The term's key is
// in the snapshot, so its fence still holds; but within 5 s of etcd answering the owner's keys
// are again exactly what it wants: the names published after the snapshot are published again,
// the names withdrawn after it (which the backup brought back) withdrawn again. Before, only
// the 5-minute resync repaired it (40 names missing and 10 deleted names served for 286 s).
func TestAWriterPlansEverythingAgainWhenEtcdIsRestored(t *testing.T) {
	c := testenv.StartEtcdCluster(t, 3)
	cli, members := wtConnect(t, c)
	d := wtWant()
	for i := range 10 {
		d.set(wtEP(wtName(fmt.Sprintf("r%d", i)), "10.0.0.1"))
	}
	obs := &wtObserver{}
	w, _ := wtStart(t, cli, writer.Config{Owner: "c1", Desired: d, Observer: obs, Members: members})
	want := func() []string {
		names := d.Names()
		sort.Strings(names)
		return names
	}
	direct := c.Client(t)
	wtEventually(t, 10*time.Second, "published", func() bool { return slices.Equal(wtOwnedNames(t, direct, "c1"), want()) })

	for round, bump := range []uint64{0, 1_000_000} {
		snap := c.Snapshot(t)
		var changed []string
		for i := range 5 { // withdrawn after the snapshot: the backup brings them back
			n := wtName(fmt.Sprintf("r%d", 5*round+i))
			d.remove(n)
			changed = append(changed, n)
		}
		for i := range 10 { // published after the snapshot: the backup lacks them
			n := wtName(fmt.Sprintf("n%d-%d", round, i))
			d.set(wtEP(n, "10.0.0.2"))
			changed = append(changed, n)
		}
		w.Enqueue(changed...)
		wtEventually(t, 10*time.Second, "the changes published before the restore", func() bool {
			return slices.Equal(wtOwnedNames(t, direct, "c1"), want())
		})

		c.Restore(t, snap, bump)
		answering := time.Now()
		direct = c.Client(t) // not one that sat out the restore in gRPC's dial back-off
		wtEventually(t, 5*time.Second, fmt.Sprintf("the owner's keys what it wants after the restore (bump %d)", bump), func() bool {
			return slices.Equal(wtOwnedNames(t, direct, "c1"), want())
		})
		t.Logf("bump %d: the owner's keys were what it wants %v after etcd answered", bump, time.Since(answering).Round(time.Millisecond))
		if !w.IsLeader() {
			t.Logf("bump %d: the writer does not lead", bump)
		}
	}
}

// TestAStandbyCampaignsAgainInARestoredEtcd: a standby waits for its leader's key to go. etcd
// is restored from a snapshot taken before 50 more revisions (plain: its revisions go back),
// and then the leader stops and resigns. The standby leads within 5 s. Before, its wait
// watched from a revision the restored store had not reached, and missed the key's delete.
func TestAStandbyCampaignsAgainInARestoredEtcd(t *testing.T) {
	c := testenv.StartEtcdCluster(t, 3)
	n := wtName("a")
	d := wtWant(wtEP(n, "10.0.0.1"))
	cliA, membersA := wtConnect(t, c)
	leader, stopLeader := wtStart(t, cliA, writer.Config{Owner: "c1", Desired: d, Members: membersA, Identity: "a"})
	wtEventually(t, 10*time.Second, "a leads", leader.IsLeader)
	cliB, membersB := wtConnect(t, c)
	standby, _ := wtStart(t, cliB, writer.Config{Owner: "c1", Desired: d, Members: membersB, Identity: "b"})
	direct := c.Client(t)
	wtEventually(t, 10*time.Second, "published", wtHostsAre(t, direct, n, "c1=10.0.0.1"))

	snap := c.Snapshot(t)
	for i := range 50 {
		wtPut(t, direct, fmt.Sprintf("/elsewhere/%d", i), "x")
	}
	c.Restore(t, snap, 0)
	answering := time.Now()
	stopLeader()
	wtEventually(t, 5*time.Second, "the standby leads after the leader stopped in the restored etcd", standby.IsLeader)
	t.Logf("the standby led %v after etcd answered", time.Since(answering).Round(time.Millisecond))
}
