package writer

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// fenceTestDesired is a Desired for the internal fencing test.
type fenceTestDesired struct {
	mu sync.Mutex
	ep record.Endpoint
}

func (d *fenceTestDesired) Endpoint(name string) (record.Endpoint, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ep, name == d.ep.Name
}
func (d *fenceTestDesired) Names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return []string{d.ep.Name}
}
func (d *fenceTestDesired) Synced() bool { return true }
func (d *fenceTestDesired) SyncedC() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// TestFencedWriteOfDeposedTerm is the race a fence exists for: a leader is deposed (its session
// lease expired, a standby took over) and, before it learns of it, sends a transaction made in
// its old term. etcd must refuse it, and the writer must step down.
func TestFencedWriteOfDeposedTerm(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	name := "app.eu1.openmcp.cluster"
	da := &fenceTestDesired{ep: record.Endpoint{Name: name, Targets: []string{"10.0.0.1"}}}
	db := &fenceTestDesired{ep: record.Endpoint{Name: name, Targets: []string{"10.0.0.1"}}}
	run := func(d Desired) *Writer {
		w, err := New(e.Client(t), Config{Owner: "c1", Desired: d, ElectionTTL: 60 * time.Second, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = w.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		return w
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	a := run(da)
	waitFor("a leads", a.IsLeader)
	oldTerm, _ := a.current()
	key := record.Key("skydns", name, "c1", "10.0.0.1")
	waitFor("a published", func() bool {
		r, err := cli.Get(ctx, key)
		return err == nil && len(r.Kvs) == 1
	})
	b := run(db)
	if _, err := cli.Revoke(ctx, oldTerm.Lease()); err != nil {
		t.Fatal(err)
	}
	waitFor("b leads", b.IsLeader)

	// a's late transaction, made in its old term.
	da.mu.Lock()
	da.ep.Targets = []string{"10.6.6.6"}
	da.mu.Unlock()
	res, err := a.reconcile(ctx, oldTerm, 0, []string{name}, nil)
	if !errors.Is(err, ErrNotLeader) {
		t.Fatalf("late reconcile of a deposed term: %+v, %v; want ErrNotLeader", res, err)
	}
	if res.Txns != 0 {
		t.Fatalf("%d transactions of a deposed term committed", res.Txns)
	}
	r, err := cli.Get(ctx, record.NamePath("skydns", name)+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kvs) != 1 || string(r.Kvs[0].Key) != key {
		t.Fatalf("keys after the late write: %v", r.Kvs)
	}
	if a.IsLeader() {
		t.Fatal("a still leads after its fence failed")
	}
	// And the raw condition: the old fence is false now, the new leader's is true.
	newTerm, _ := b.current()
	for _, tc := range []struct {
		term *Term
		want bool
	}{{oldTerm, false}, {newTerm, true}} {
		tr, err := cli.Txn(ctx).If(tc.term.Fence()).Commit()
		if err != nil || tr.Succeeded != tc.want {
			t.Fatalf("fence of term rev %d: %v %v, want %v", tc.term.Rev, tr.Succeeded, err, tc.want)
		}
	}
}
