package publish

// A leader that crashes is replaced within 2-3 s (issue 40): the election's 2 s TTL, fenced
// writes, and a /ready that says whether a replica has found its place in the election.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

const (
	takeoverZone   = "eu1.openmcp.cluster"
	takeoverPrefix = "/skydns/cluster/openmcp/eu1/"
	takeoverAddr   = "203.0.113.10"
	leaderSeries   = `coredns_gatewaydns_writer_leader{owner="eu1"}`
	putsSeries     = `coredns_gatewaydns_writer_writes_total{op="put",owner="eu1"}`
)

// TestALeaderKilledIsReplacedWithinThreeSeconds: two writer replicas of one owner. Ten times,
// the leader is SIGKILLed and a route created at once: the central server answers it within
// 3 s, every round; the killed replica then comes back (same POD_NAME, as its container would)
// and stands by. Every write a leader reports is in etcd's history, and etcd holds no write
// that no leader reports: the puts the leaders counted equal the puts etcd saw, and etcd holds
// exactly one key per route. Then a successor of another identity (no POD_NAME) that starts
// while the dead leader's key still lives is not ready until it writes.
func TestALeaderKilledIsReplacedWithinThreeSeconds(t *testing.T) {
	const rounds, bound = 10, 3 * time.Second
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "", takeoverAddr)
	k8s.HTTPRoute("infra", "before", "infra", "public", "before."+takeoverZone)
	central := e2e.RunCentral(t, etcd.ClientURL)
	etcdPuts := countPuts(t, cli, takeoverPrefix)

	var replicas [2]*corednsproc.Process
	start := func(i int) {
		cf := e2e.WriterCorefile(etcd.ClientURL, "eu1", kube.KubeconfigFile, takeoverZone)
		replicas[i] = corednsproc.Start(t, fmt.Sprintf("replica-%d.Corefile", i), cf, fmt.Sprintf("POD_NAME=replica-%d", i))
	}
	start(0)
	start(1)
	for _, r := range replicas {
		r.WaitReady(t, 60*time.Second)
	}
	e2e.WaitFor(t, 15*time.Second, central.DNS, "before."+takeoverZone+".", dns.TypeA, e2e.AnswersWith(takeoverAddr))

	leader := soleLeader(t, replicas[:])
	var reported float64 // the puts of the leaders killed so far, as each counted them
	var took []string
	for i := range rounds {
		puts, _ := replicas[leader].Metric(putsSeries)
		reported += puts
		killed := time.Now()
		replicas[leader].Kill()
		name := fmt.Sprintf("round-%d", i)
		k8s.HTTPRoute("infra", name, "infra", "public", name+"."+takeoverZone)
		e2e.WaitFor(t, 15*time.Second, central.DNS, name+"."+takeoverZone+".", dns.TypeA, e2e.AnswersWith(takeoverAddr))
		d := time.Since(killed)
		took = append(took, d.Round(time.Millisecond).String())
		if d > bound {
			t.Errorf("round %d: the route created at the leader's kill answered after %v, want within %v", i+1, d, bound)
		}
		next := 1 - leader
		if v, _ := replicas[next].Metric(leaderSeries); v != 1 {
			t.Fatalf("round %d: replica-%d answered the route but does not say it leads (%v)", i+1, next, v)
		}
		start(leader) // the killed pod's container restarts, and stands by
		replicas[leader].WaitReady(t, 60*time.Second)
		leader = next
	}
	t.Logf("%d rounds: the route created at the leader's SIGKILL answered after %s", rounds, strings.Join(took, ", "))

	// Every route once; every put a leader counted is one etcd saw, and no other.
	keys := e2e.KeysUnder(t, cli, takeoverPrefix)
	if len(keys) != rounds+1 {
		t.Errorf("etcd holds %d keys for %d routes: %v", len(keys), rounds+1, keys)
	}
	puts, _ := replicas[leader].Metric(putsSeries)
	standby, _ := replicas[1-leader].Metric(putsSeries)
	reported += puts + standby
	if seen := etcdPuts(); float64(seen) != reported {
		t.Errorf("etcd saw %d puts of records, the leaders counted %v", seen, reported)
	} else {
		t.Logf("%d puts of records, each counted by the leader that made it and seen by etcd", seen)
	}

	t.Run("a successor of another identity is ready when it writes", func(t *testing.T) {
		replicas[1-leader].Kill() // the standby first: no one takes over
		replicas[leader].Kill()
		k8s.HTTPRoute("infra", "successor", "infra", "public", "successor."+takeoverZone)
		started := time.Now()
		// No POD_NAME: a new identity, which must wait out the dead leader's key.
		s := corednsproc.Start(t, "successor.Corefile", e2e.WriterCorefile(etcd.ClientURL, "eu1", kube.KubeconfigFile, takeoverZone))
		var readyAt atomic.Int64
		polled := timeReady(s, started, &readyAt)
		e2e.WaitFor(t, 15*time.Second, central.DNS, "successor."+takeoverZone+".", dns.TypeA, e2e.AnswersWith(takeoverAddr))
		writes := time.Since(started)
		s.WaitReady(t, 15*time.Second)
		polled()
		ready := time.Duration(readyAt.Load())
		t.Logf("started after the leader's kill: ready after %v, its first write answered after %v", ready.Round(time.Millisecond), writes.Round(time.Millisecond))
		if ready < writes-500*time.Millisecond {
			t.Errorf("ready %v before its first write was answered; want not before it leads", writes-ready)
		}
	})
}

// soleLeader waits until exactly one of replicas says it leads, and returns it.
func soleLeader(t *testing.T, replicas []*corednsproc.Process) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var leading []int
		for i, r := range replicas {
			if v, _ := r.Metric(leaderSeries); v == 1 {
				leading = append(leading, i)
			}
		}
		switch {
		case len(leading) == 1:
			return leading[0]
		case len(leading) > 1:
			t.Fatalf("replicas %v all say they lead", leading)
		case time.Now().After(deadline):
			t.Fatal("no replica leads")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// countPuts watches prefix from now on; the returned func says how many puts etcd has made
// under it up to the revision it has when asked.
func countPuts(t *testing.T, cli *clientv3.Client, prefix string) func() int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	revision := func() int64 {
		gctx, gcancel := context.WithTimeout(ctx, e2e.EtcdCallTimeout)
		defer gcancel()
		resp, err := cli.Get(gctx, "/", clientv3.WithCountOnly())
		if err != nil {
			t.Fatalf("reading etcd: %v", err)
		}
		return resp.Header.Revision
	}
	var puts, seen atomic.Int64 // seen: the revision the watch has reached
	done := make(chan struct{})
	wch := cli.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(revision()+1))
	go func() {
		defer close(done)
		for wr := range wch {
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypePut {
					puts.Add(1)
				}
			}
			seen.Store(wr.Header.Revision)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return func() int {
		now := revision()
		deadline := time.Now().Add(e2e.EtcdCallTimeout)
		for seen.Load() < now {
			if time.Now().After(deadline) {
				t.Fatalf("the watch of %s did not reach revision %d", prefix, now)
			}
			pctx, pcancel := context.WithTimeout(ctx, e2e.EtcdCallTimeout)
			_ = cli.RequestProgress(pctx) // a progress notification carries the revision
			pcancel()
			time.Sleep(20 * time.Millisecond)
		}
		return int(puts.Load())
	}
}

// timeReady polls p's /ready every 10 ms from now on and stores in at how long after since it
// first answered 200; the returned func stops the polling.
func timeReady(p *corednsproc.Process, since time.Time, at *atomic.Int64) func() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, code := e2e.HTTPGet("http://" + p.Ready + "/ready"); code == http.StatusOK {
				at.Store(int64(time.Since(since)))
				return
			}
			select {
			case <-stop:
				// One more look: the caller stops it once it saw the process ready, maybe
				// within the 10 ms since the last; ready then is no later than now.
				if _, code := e2e.HTTPGet("http://" + p.Ready + "/ready"); code == http.StatusOK {
					at.Store(int64(time.Since(since)))
				}
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() {
		close(stop)
		<-done
	}
}
