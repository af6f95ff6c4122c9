package writer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// TestAReplicaIsSettledWhenItLeadsOrStandsBehindALiveLeader pins what a replica's readiness
// reads (Writer.Settled): a leader once its first full resync is made; a standby once it sees the
// leader keep its session alive; and not a replica that waits behind the key of a crashed
// leader of another identity, whose lease lives on without keep-alives, until it leads itself.
func TestAReplicaIsSettledWhenItLeadsOrStandsBehindALiveLeader(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	cfg := writer.Config{Owner: "c1", Desired: wtWant(wtEP(wtName("a"), "10.0.0.1")), ElectionTTL: writer.DefaultElectionTTL}

	cfg.Identity = "a"
	a, _ := wtStart(t, e.Client(t), cfg)
	wtEventually(t, 10*time.Second, "a leads and is settled", func() bool { return a.IsLeader() && a.Settled() })

	cfg.Identity = "b"
	b, _ := wtStart(t, e.Client(t), cfg)
	started := time.Now()
	wtEventually(t, 5*time.Second, "b, standing by a live leader, is settled", b.Settled)
	t.Logf("the standby settled %v after its start", time.Since(started).Round(time.Millisecond))
	if b.IsLeader() {
		t.Fatal("b leads beside a")
	}

	// A crashed leader of another identity: its key on a lease that nobody keeps alive.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lease, err := cli.Grant(ctx, int64(writer.DefaultElectionTTL/time.Second))
	if err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("%s/c2/%x", writer.DefaultLeaderPrefix, lease.ID)
	if _, err := cli.Put(ctx, dead, "crashed-pod", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	cfg.Owner, cfg.Identity = "c2", "c"
	c, _ := wtStart(t, e.Client(t), cfg)
	for {
		settled := c.Settled()
		resp, err := cli.Get(ctx, dead)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			break
		}
		if settled || c.IsLeader() {
			t.Fatalf("c is settled (%v) or leads (%v) while the crashed leader's key still lives", settled, c.IsLeader())
		}
		time.Sleep(20 * time.Millisecond)
	}
	wtEventually(t, 5*time.Second, "c leads once the crashed leader's key is gone, and is settled", func() bool { return c.IsLeader() && c.Settled() })
}
