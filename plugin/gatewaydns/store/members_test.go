package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// lines is a Logger that keeps what it is told.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) Infof(f string, args ...any)    { l.add("I " + fmt.Sprintf(f, args...)) }
func (l *lines) Warningf(f string, args ...any) { l.add("W " + fmt.Sprintf(f, args...)) }
func (l *lines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, s)
}

func (l *lines) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.all {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}

// gets makes n gets through c, each bounded by 300 ms, and counts those that timed out.
func gets(ctx context.Context, c *clientv3.Client, n int) (timeouts int) {
	for i := range n {
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		if _, err := c.Get(rctx, fmt.Sprintf("/members-test/%d", i)); err != nil {
			timeouts++
		}
		cancel()
	}
	return timeouts
}

// startMembers starts a 3-member etcd, a client of every member and Members over it, whose
// Run ends (and must return) with the test.
func startMembers(t *testing.T) (*testenv.EtcdCluster, *clientv3.Client, *Members, *lines) {
	t.Helper()
	cluster := testenv.StartEtcdCluster(t, 3)
	client, err := NewClient(Config{Endpoints: cluster.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	log := &lines{}
	m := NewMembers(client, cluster.Endpoints(), log)
	runMembers(t, m)
	return cluster, client, m, log
}

// runMembers starts Run for m; the test's cleanup ends it and waits for it to return.
func runMembers(t *testing.T, m *Members) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Error("Members.Run did not return within 2s of its context's end")
		}
	})
}

// A frozen member is left at the first suspicion, before Suspect returns, so that no request
// after it goes there (without Members one in three would, for 10 s); once thawed it is used
// again within about a recheck; each change is logged once.
func TestAFrozenMemberIsLeftAtTheFirstSuspicionAndUsedAgainOnceItAnswers(t *testing.T) {
	cluster, client, m, log := startMembers(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A suspicion with every member answering changes nothing.
	m.Suspect(ctx)
	if got := m.Using(); !slices.Equal(got, cluster.Endpoints()) {
		t.Fatalf("with every member answering, using %v, want all of %v", got, cluster.Endpoints())
	}

	// A control client without Members, to show that the frozen member is in the way.
	control, err := NewClient(Config{Endpoints: cluster.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer control.Close()
	// gRPC connects on the first request: connected before the freeze, the frozen member's
	// connection stays open and is picked, as in production.
	for _, c := range []*clientv3.Client{client, control} {
		if timeouts := gets(ctx, c, 30); timeouts != 0 {
			t.Fatalf("%d of 30 gets timed out with every member up", timeouts)
		}
	}

	frozen := cluster.Members[1]
	frozen.Freeze()
	if timeouts := gets(ctx, control, 30); timeouts == 0 {
		t.Fatalf("a client without Members had no get time out with %s frozen: the test shows nothing", frozen.Name)
	} else {
		t.Logf("without Members, %d of 30 gets timed out with %s frozen", timeouts, frozen.Name)
	}
	start := time.Now()
	m.Suspect(ctx)
	took := time.Since(start)
	want := []string{cluster.Members[0].ClientURL, cluster.Members[2].ClientURL}
	if got := m.Using(); !slices.Equal(got, want) {
		t.Fatalf("after a suspicion with %s frozen, using %v, want %v", frozen.Name, got, want)
	}
	t.Logf("%s left %v after the suspicion", frozen.Name, took.Round(time.Millisecond))
	if timeouts := gets(ctx, client, 30); timeouts != 0 {
		t.Fatalf("with %s left, %d of 30 gets still timed out", frozen.Name, timeouts)
	}

	frozen.Thaw()
	thawed := time.Now()
	for !slices.Equal(m.Using(), cluster.Endpoints()) {
		if time.Since(thawed) > 5*time.Second {
			t.Fatalf("%s thawed 5s ago and still not used: using %v", frozen.Name, m.Using())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%s used again %v after the thaw", frozen.Name, time.Since(thawed).Round(time.Millisecond))
	if n := log.count("Leaving etcd member " + frozen.ClientURL); n != 1 {
		t.Errorf("logged the leave %d times, want once: %q", n, log.all)
	}
	if n := log.count("Using etcd member " + frozen.ClientURL + " again"); n != 1 {
		t.Errorf("logged the return %d times, want once: %q", n, log.all)
	}
}

// With no member answering there is nothing to prefer: the client keeps every endpoint, so
// that its own reconnects find the first member back; and a nil Members does nothing.
func TestWithNoMemberAnsweringEveryEndpointStays(t *testing.T) {
	cluster, _, m, log := startMembers(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for _, member := range cluster.Members {
		member.Stop()
	}
	for range 3 {
		m.Suspect(ctx)
	}
	if got := m.Using(); !slices.Equal(got, cluster.Endpoints()) {
		t.Errorf("with every member stopped, using %v, want all of %v", got, cluster.Endpoints())
	}
	if len(log.all) != 0 {
		t.Errorf("nothing changed, yet logged %q", log.all)
	}

	start := time.Now()
	var none *Members
	none.Suspect(ctx)
	none.Run(ctx)
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("a nil Members' Suspect and Run took %v, want at once", took)
	}
}
