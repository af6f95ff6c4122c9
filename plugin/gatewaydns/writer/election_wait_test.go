package writer

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/gatewaydns/gatewaydns/internal/tcpproxy"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// TestWaitForLeaderEndsWithSessionWhenEtcdGoesDarkBeforeTheWatch is the window a standby
// crosses once per campaign: it has read the leader's key and is about to watch it, and etcd
// stops answering. The client's Watch does not return until its stream is open, so waiting
// only on the session's end after Watch returned hung until the proxy came back (it failed 3
// runs in 15 under load). The session's end must end that wait too: within its TTL plus the
// client's deadline check (every second), 3 s alone; the bound leaves room for a loaded
// machine (6 s seen with 6 busy loops on 2 cores) and stays well apart from the hang's 30 s.
func TestWaitForLeaderEndsWithSessionWhenEtcdGoesDarkBeforeTheWatch(t *testing.T) {
	e := testenv.StartEtcd(t)
	direct := e.Client(t)
	leaderKey := "/gatewaydns/leader/test/leader"
	if _, err := direct.Put(context.Background(), leaderKey, "someone"); err != nil {
		t.Fatal(err)
	}

	p, err := tcpproxy.Start(e.ClientURL[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	cfg := e.ClientConfig(t)
	cfg.Endpoints = []string{"http://" + p.Addr}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })

	const ttl = 2
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Orphan)
	// The session's keep-alive has been answered once: from here on its deadline is the TTL.
	ka, err := cli.KeepAliveOnce(context.Background(), s.Lease())
	if err != nil || ka.TTL <= 0 {
		t.Fatalf("session lease not alive: %v %v", ka, err)
	}
	got, err := cli.Get(context.Background(), leaderKey)
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("reading the leader key: %v %v", got, err)
	}

	p.BlackHole()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err = waitDelete(ctx, cli, leaderKey, got.Header.Revision, s.Ctx())
	took := time.Since(start)
	if !errors.Is(err, errSessionLost) {
		t.Fatalf("waitDelete = %v after %v, want the session's loss", err, took.Round(time.Millisecond))
	}
	if bound := 10 * time.Second; took > bound {
		t.Fatalf("waitDelete noticed the lost session after %v, want within %v", took.Round(time.Millisecond), bound)
	}
	t.Logf("waitDelete returned %v after %v", err, took.Round(time.Millisecond))
}
