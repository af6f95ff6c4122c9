package writer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// TestLateTxnOfSameTermDoesNotOverwrite is what a frozen member can do: a transaction sent to
// it is applied when it resumes, after a newer transaction of the same term went through
// another member. The fence alone (the term's key) lets it through; the compare on what its
// plan read refuses it, and the refusal is told apart from a lost fence: the writer replans,
// it does not step down.
func TestLateTxnOfSameTermDoesNotOverwrite(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "app.eu1.openmcp.cluster"
	d := &fenceTestDesired{ep: record.Endpoint{Name: name, Targets: []string{"10.0.0.1"}, TTL: 30}}
	w, err := New(e.Client(t), Config{Owner: "c1", Desired: d, ElectionTTL: 60 * time.Second, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(rctx) }()
	t.Cleanup(func() { rcancel(); <-done })
	for deadline := time.Now().Add(10 * time.Second); !w.IsLeader(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
	}
	term, _ := w.current()
	key := record.Key("skydns", name, "c1", "10.0.0.1")
	value := func(ttl uint32) []byte {
		ep := d.ep
		ep.TTL = ttl
		return record.NewValue(ep, "c1", "10.0.0.1").Encode()
	}
	readAt := func() int64 {
		r, err := cli.Get(ctx, key)
		if err != nil || len(r.Kvs) != 1 {
			t.Fatalf("reading %s: %v %v", key, r, err)
		}
		return r.Kvs[0].ModRevision
	}
	var first int64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r, err := cli.Get(ctx, key); err == nil && len(r.Kvs) == 1 {
			first = r.Kvs[0].ModRevision
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not published")
		}
	}

	// The late transaction was planned from revision first (TTL 60); a newer one of the same
	// term (TTL 90) went through meanwhile.
	stale := []plan.Change{{Name: name, Puts: []plan.Put{{Key: key, Value: value(60)}}}}
	newer := []plan.Change{{Name: name, Puts: []plan.Put{{Key: key, Value: value(90)}}}}
	var res Result
	if err := w.commit(ctx, term, snapshot{keys: map[string]int64{key: first}}, newer, &res); err != nil {
		t.Fatalf("newer commit: %v", err)
	}
	newerRev := readAt()
	err = w.commit(ctx, term, snapshot{keys: map[string]int64{key: first}}, stale, &res)
	if !errors.Is(err, errStale) {
		t.Fatalf("late commit: %v, want errStale", err)
	}
	if got := readAt(); got != newerRev {
		t.Fatalf("the late transaction overwrote the newer value (rev %d, newer %d)", got, newerRev)
	}
	// A new key the plan saw absent: refused once someone created it.
	err = w.commit(ctx, term, snapshot{}, stale, &res)
	if !errors.Is(err, errStale) {
		t.Fatalf("late create of a key that exists now: %v, want errStale", err)
	}
	// A claim planned from a read of the name before another owner's claim on it committed
	// (which moved the name's claim guard): refused, even for a key of its own that nobody
	// wrote.
	if _, err := cli.Put(ctx, w.guardKey(name), "c2"); err != nil {
		t.Fatal(err)
	}
	other := record.Key("skydns", name, "c1", "10.0.0.9")
	claim := []plan.Change{{Name: name, Claim: true, Puts: []plan.Put{{Key: other, Value: value(60)}}}}
	err = w.commit(ctx, term, snapshot{names: map[string]int64{name: first}}, claim, &res)
	if !errors.Is(err, errStale) {
		t.Fatalf("claim on a name claimed since it was read: %v, want errStale", err)
	}
	if r, err := cli.Get(ctx, other); err != nil || len(r.Kvs) != 0 {
		t.Fatalf("the refused claim wrote %s: %v %v", other, r, err)
	}
	if !w.IsLeader() {
		t.Fatal("a refused compare deposed the leader")
	}
	// The reconcile that follows plans from what is there: back to what Desired wants.
	if _, err := w.Reconcile(ctx, []string{name}); err != nil {
		t.Fatal(err)
	}
	r, err := cli.Get(ctx, key)
	if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != string(value(30)) {
		t.Fatalf("after the reconcile: %v %v", r, err)
	}
}
