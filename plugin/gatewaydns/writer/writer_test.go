package writer_test

// Tests of the writer against a real etcd (internal/testenv). Helpers are prefixed "wt" so
// that they do not collide with other tests of package writer_test.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

const wtZone = "openmcp.cluster"

// wtDesired is a Desired that a test changes.
type wtDesired struct {
	mu      sync.Mutex
	eps     map[string]record.Endpoint
	synced  bool
	syncedC chan struct{} // closed at the first setSynced(true), as the Kubernetes caches do
}

func wtWant(eps ...record.Endpoint) *wtDesired {
	d := &wtDesired{eps: make(map[string]record.Endpoint), synced: true, syncedC: make(chan struct{})}
	close(d.syncedC)
	for _, ep := range eps {
		d.eps[ep.Name] = ep
	}
	return d
}

// wtWantUnsynced is a Desired whose sources have not synced yet.
func wtWantUnsynced(eps ...record.Endpoint) *wtDesired {
	d := wtWant(eps...)
	d.synced, d.syncedC = false, make(chan struct{})
	return d
}

func (d *wtDesired) SyncedC() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.syncedC
}

func (d *wtDesired) Endpoint(name string) (record.Endpoint, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ep, ok := d.eps[name]
	return ep, ok
}

func (d *wtDesired) Names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Collect(maps.Keys(d.eps))
}

func (d *wtDesired) Synced() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.synced
}

func (d *wtDesired) set(ep record.Endpoint) {
	d.mu.Lock()
	d.eps[ep.Name] = ep
	d.mu.Unlock()
}

func (d *wtDesired) remove(name string) {
	d.mu.Lock()
	delete(d.eps, name)
	d.mu.Unlock()
}

func (d *wtDesired) setSynced(s bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.synced = s
	select {
	case <-d.syncedC:
	default:
		if s {
			close(d.syncedC)
		}
	}
}

func wtEP(name string, targets ...string) record.Endpoint {
	return record.Endpoint{Name: name, Targets: targets, TTL: 30,
		Sources: []record.ObjectRef{{Kind: "HTTPRoute", Namespace: "default", Name: strings.Split(name, ".")[0]}}}
}

// wtObserver records what a writer reports.
type wtObserver struct {
	mu         sync.Mutex
	leading    bool
	commits    int
	puts, dels int
	conflicts  []plan.Conflict
	skipped    []plan.Skip
	failed     map[string]error
	synced     int
	propagated map[string]time.Duration
	problems   [2]int // the last Problems call: lost, failing
	leadCalls  []bool // every Leading call, in order
	reachable  []bool // every EtcdReachable call, in order
	refusals   int    // ClaimGuardsRefused calls
}

func (o *wtObserver) ClaimGuardsRefused(string, error) {
	o.mu.Lock()
	o.refusals++
	o.mu.Unlock()
}

func (o *wtObserver) guardRefusals() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.refusals
}

func (o *wtObserver) Leading(l bool) {
	o.mu.Lock()
	o.leading = l
	o.leadCalls = append(o.leadCalls, l)
	o.mu.Unlock()
}

func (o *wtObserver) EtcdReachable(r bool) {
	o.mu.Lock()
	o.reachable = append(o.reachable, r)
	o.mu.Unlock()
}
func (o *wtObserver) Committed(p, d int) {
	o.mu.Lock()
	o.commits++
	o.puts += p
	o.dels += d
	o.mu.Unlock()
}
func (o *wtObserver) Conflict(c plan.Conflict) {
	o.mu.Lock()
	o.conflicts = append(o.conflicts, c)
	o.mu.Unlock()
}
func (o *wtObserver) Skipped(s plan.Skip) {
	o.mu.Lock()
	o.skipped = append(o.skipped, s)
	o.mu.Unlock()
}
func (o *wtObserver) Failed(name string, err error) {
	o.mu.Lock()
	if o.failed == nil {
		o.failed = make(map[string]error)
	}
	o.failed[name] = err
	o.mu.Unlock()
}
func (o *wtObserver) Synced(time.Time) { o.mu.Lock(); o.synced++; o.mu.Unlock() }
func (o *wtObserver) Problems(lost, failing int) {
	o.mu.Lock()
	o.problems = [2]int{lost, failing}
	o.mu.Unlock()
}
func (o *wtObserver) Propagated(name string, d time.Duration) {
	o.mu.Lock()
	if o.propagated == nil {
		o.propagated = make(map[string]time.Duration)
	}
	o.propagated[name] = d
	o.mu.Unlock()
}

func (o *wtObserver) get(f func(o *wtObserver) bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return f(o)
}

func (o *wtObserver) syncCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.synced
}

func (o *wtObserver) failedName(name string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failed[name]
}

func (o *wtObserver) hasSkip(name string, r plan.Reason) bool {
	return o.get(func(o *wtObserver) bool {
		for _, s := range o.skipped {
			if s.Name == name && s.Reason == r {
				return true
			}
		}
		return false
	})
}

// wtStart runs a writer until the returned stop is called (or the test ends).
func wtStart(t *testing.T, cli *clientv3.Client, cfg writer.Config) (*writer.Writer, func()) {
	t.Helper()
	if cfg.ElectionTTL == 0 {
		cfg.ElectionTTL = 5 * time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	w, err := writer.New(cli, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return w, stop
}

func wtEventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func wtCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wtKeys is every key under the records' root.
func wtKeys(t *testing.T, cli *clientv3.Client) map[string]*mvccpb.KeyValue {
	t.Helper()
	resp, err := cli.Get(wtCtx(t), "/skydns/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]*mvccpb.KeyValue, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		m[string(kv.Key)] = kv
	}
	return m
}

// wtHosts is name -> sorted "owner=host" of the keys one level below the name.
func wtHosts(t *testing.T, cli *clientv3.Client, name string) []string {
	t.Helper()
	base := record.NamePath("skydns", name) + "/"
	var out []string
	for k, kv := range wtKeys(t, cli) {
		if !strings.HasPrefix(k, base) || strings.Contains(k[len(base):], "/") {
			continue
		}
		var s msg.Service // what the stock etcd plugin reads
		if err := json.Unmarshal(kv.Value, &s); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		out = append(out, record.OwnerOf(kv.Value)+"="+s.Host)
	}
	slices.Sort(out)
	return out
}

func wtHostsAre(t *testing.T, cli *clientv3.Client, name string, want ...string) func() bool {
	slices.Sort(want)
	return func() bool { return slices.Equal(wtHosts(t, cli, name), want) }
}

func wtPut(t *testing.T, cli *clientv3.Client, k, v string) {
	t.Helper()
	if _, err := cli.Put(wtCtx(t), k, v); err != nil {
		t.Fatal(err)
	}
}

func wtName(l string) string { return l + ".eu1." + wtZone }

func TestWriterCreatesUpdatesDeletes(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	app, web := wtName("app"), wtName("*.apps")
	d := wtWant(wtEP(app, "10.0.0.1", "10.0.0.2"), wtEP(web, "lb.example.net"))
	obs := &wtObserver{}
	w, _ := wtStart(t, cli, writer.Config{Owner: "c1", Desired: d, Observer: obs})

	wtEventually(t, 10*time.Second, "first sync", func() bool { return obs.syncCount() > 0 })
	if got, want := wtHosts(t, cli, app), []string{"c1=10.0.0.1", "c1=10.0.0.2"}; !slices.Equal(got, want) {
		t.Fatalf("app: %v, want %v", got, want)
	}
	if got := wtHosts(t, cli, web); !slices.Equal(got, []string{"c1=lb.example.net"}) {
		t.Fatalf("wildcard: %v", got)
	}
	kv := wtKeys(t, cli)[record.Key("skydns", app, "c1", "10.0.0.1")]
	if kv == nil {
		t.Fatal("no key at the deterministic place")
	}
	if got := string(kv.Value); got != `{"host":"10.0.0.1","ttl":30,"targetstrip":1,"owner":"c1","sources":["HTTPRoute/default/app"]}` {
		t.Fatalf("value %s", got)
	}

	// A changed target: new key put, old key deleted (in one transaction, see the adoption test).
	d.set(wtEP(app, "10.0.0.1", "10.0.0.3"))
	w.Enqueue(app)
	wtEventually(t, 5*time.Second, "target changed", wtHostsAre(t, cli, app, "c1=10.0.0.1", "c1=10.0.0.3"))

	// A removed name: its keys go.
	d.remove(app)
	w.Enqueue(app)
	wtEventually(t, 5*time.Second, "name removed", wtHostsAre(t, cli, app))
	if got := wtHosts(t, cli, web); len(got) != 1 {
		t.Fatalf("another name was touched: %v", got)
	}
	if !obs.get(func(o *wtObserver) bool { _, ok := o.propagated[app]; return ok }) {
		t.Error("no propagation delay reported for an enqueued name")
	}
	if _, err := w.Reconcile(wtCtx(t), []string{app}); err != nil {
		t.Fatalf("Reconcile as leader: %v", err)
	}
}

func TestWriterRestartRewritesNothing(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	eps := []record.Endpoint{wtEP(wtName("a"), "10.0.0.1", "10.0.0.2"), wtEP(wtName("*.b"), "10.0.0.3"), wtEP(wtName("c"), "lb.example.net")}
	obs1 := &wtObserver{}
	_, stop1 := wtStart(t, cli, writer.Config{Owner: "c1", Desired: wtWant(eps...), Observer: obs1})
	wtEventually(t, 10*time.Second, "first writer synced", func() bool { return obs1.syncCount() > 0 })
	before := wtKeys(t, cli)
	if len(before) != 4 {
		t.Fatalf("%d keys, want 4", len(before))
	}
	stop1()

	obs2 := &wtObserver{}
	_, _ = wtStart(t, cli, writer.Config{Owner: "c1", Desired: wtWant(eps...), Observer: obs2})
	wtEventually(t, 10*time.Second, "second writer synced", func() bool { return obs2.syncCount() > 0 })
	after := wtKeys(t, cli)
	if len(after) != len(before) {
		t.Fatalf("keys %d -> %d", len(before), len(after))
	}
	for k, kv := range before {
		if after[k] == nil || after[k].ModRevision != kv.ModRevision {
			t.Errorf("%s rewritten: mod revision %d -> %v", k, kv.ModRevision, after[k])
		}
	}
	if obs2.get(func(o *wtObserver) bool { return o.commits != 0 }) {
		t.Error("the restarted writer committed a transaction")
	}
}

func TestWriterResyncRepairsHandDeletedKey(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	app := wtName("app")
	obs := &wtObserver{}
	wtStart(t, cli, writer.Config{Owner: "c1", Desired: wtWant(wtEP(app, "10.0.0.1")), Observer: obs,
		ResyncInterval: 300 * time.Millisecond})
	wtEventually(t, 10*time.Second, "published", wtHostsAre(t, cli, app, "c1=10.0.0.1"))
	if _, err := cli.Delete(wtCtx(t), record.Key("skydns", app, "c1", "10.0.0.1")); err != nil {
		t.Fatal(err)
	}
	wtEventually(t, 5*time.Second, "key restored by the resync", wtHostsAre(t, cli, app, "c1=10.0.0.1"))
}

func TestWriterSharedOwnersAndForeignKeys(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	app := wtName("app")
	// Keys of others: no owner (by hand, or external-dns without strict mode), a third owner.
	unowned := record.NamePath("skydns", app) + "/3e6bee2e"
	third := record.NamePath("skydns", app) + "/0badc0de"
	wtPut(t, cli, unowned, `{"host":"10.9.0.1","text":"","ttl":300,"targetstrip":1}`)
	wtPut(t, cli, third, `{"host":"10.9.0.2","ttl":300,"targetstrip":1,"owner":"c3"}`)
	d1 := wtWant(wtEP(app, "10.0.0.1"))
	d2 := wtWant(wtEP(app, "10.0.0.2"))
	obs1, obs2 := &wtObserver{}, &wtObserver{}
	w1, _ := wtStart(t, cli, writer.Config{Owner: "c1", Desired: d1, Observer: obs1})
	wtStart(t, cli, writer.Config{Owner: "c2", Desired: d2, Observer: obs2})
	wtEventually(t, 10*time.Second, "union of both owners and the foreign keys",
		wtHostsAre(t, cli, app, "c1=10.0.0.1", "c2=10.0.0.2", "=10.9.0.1", "c3=10.9.0.2"))

	// c1 withdraws: only its key goes.
	before := wtKeys(t, cli)
	d1.remove(app)
	w1.Enqueue(app)
	wtEventually(t, 5*time.Second, "c1 withdrew", wtHostsAre(t, cli, app, "c2=10.0.0.2", "=10.9.0.1", "c3=10.9.0.2"))
	after := wtKeys(t, cli)
	for _, k := range []string{unowned, third, record.Key("skydns", app, "c2", "10.0.0.2")} {
		if after[k].ModRevision != before[k].ModRevision {
			t.Errorf("%s was modified", k)
		}
	}
}

func TestWriterExclusiveOldestClaimWins(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	app := wtName("app")
	d1 := wtWant(wtEP(app, "10.0.0.1"))
	obs1 := &wtObserver{}
	w1, _ := wtStart(t, cli, writer.Config{Owner: "c1", Desired: d1, Observer: obs1, Conflicts: plan.Exclusive})
	wtEventually(t, 10*time.Second, "c1 published", wtHostsAre(t, cli, app, "c1=10.0.0.1"))

	obs2 := &wtObserver{}
	wtStart(t, cli, writer.Config{Owner: "c2", Desired: wtWant(wtEP(app, "10.0.0.2")), Observer: obs2,
		Conflicts: plan.Exclusive})
	wtEventually(t, 10*time.Second, "c2 reports the conflict", func() bool {
		return obs2.get(func(o *wtObserver) bool { return len(o.conflicts) > 0 })
	})
	c := obs2.conflicts[0]
	if c.Name != app || c.Winner != "c1" || c.WinnerRevision == 0 {
		t.Fatalf("conflict %+v", c)
	}
	if got := wtHosts(t, cli, app); !slices.Equal(got, []string{"c1=10.0.0.1"}) {
		t.Fatalf("the loser wrote: %v", got)
	}
	if obs1.get(func(o *wtObserver) bool { return len(o.conflicts) > 0 }) {
		t.Fatal("the winner reported a conflict")
	}

	// The winner withdraws: the name is free, and c2, which watches the name it lost, claims
	// it at once, not at its next full resync (minutes away).
	d1.remove(app)
	w1.Enqueue(app)
	wtEventually(t, 3*time.Second, "c1 withdrew and c2 took the free name by itself", wtHostsAre(t, cli, app, "c2=10.0.0.2"))
}

func TestWriterPolicies(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)

	t.Run("upsert-only never deletes a name", func(t *testing.T) {
		app := wtName("upsert")
		d := wtWant(wtEP(app, "10.0.0.1"))
		obs := &wtObserver{}
		w, stop := wtStart(t, cli, writer.Config{Owner: "up", Desired: d, Observer: obs, Policy: plan.UpsertOnly})
		defer stop()
		wtEventually(t, 10*time.Second, "published", wtHostsAre(t, cli, app, "up=10.0.0.1"))
		d.remove(app)
		w.Enqueue(app)
		wtEventually(t, 5*time.Second, "policy skip reported", func() bool { return obs.hasSkip(app, plan.ReasonPolicy) })
		if got := wtHosts(t, cli, app); !slices.Equal(got, []string{"up=10.0.0.1"}) {
			t.Fatalf("upsert-only deleted: %v", got)
		}
		if _, err := w.Resync(wtCtx(t)); err != nil {
			t.Fatal(err)
		}
		if got := wtHosts(t, cli, app); !slices.Equal(got, []string{"up=10.0.0.1"}) {
			t.Fatalf("upsert-only resync deleted: %v", got)
		}
	})

	t.Run("create-only never updates", func(t *testing.T) {
		app := wtName("create")
		d := wtWant(wtEP(app, "10.0.0.1"))
		obs := &wtObserver{}
		w, stop := wtStart(t, cli, writer.Config{Owner: "co", Desired: d, Observer: obs, Policy: plan.CreateOnly})
		defer stop()
		wtEventually(t, 10*time.Second, "published", wtHostsAre(t, cli, app, "co=10.0.0.1"))
		before := wtKeys(t, cli)[record.Key("skydns", app, "co", "10.0.0.1")].ModRevision
		d.set(wtEP(app, "10.0.0.2"))
		w.Enqueue(app)
		wtEventually(t, 5*time.Second, "policy skip reported", func() bool { return obs.hasSkip(app, plan.ReasonPolicy) })
		if got := wtHosts(t, cli, app); !slices.Equal(got, []string{"co=10.0.0.1"}) {
			t.Fatalf("create-only updated: %v", got)
		}
		if after := wtKeys(t, cli)[record.Key("skydns", app, "co", "10.0.0.1")].ModRevision; after != before {
			t.Fatal("create-only rewrote a key")
		}
		// A new name is still created.
		other := wtName("create2")
		d.set(wtEP(other, "10.0.0.5"))
		w.Enqueue(other)
		wtEventually(t, 5*time.Second, "new name created", wtHostsAre(t, cli, other, "co=10.0.0.5"))
	})

	t.Run("nothing is deleted while sources are not synced", func(t *testing.T) {
		app := wtName("unsynced")
		d := wtWant(wtEP(app, "10.0.0.1"))
		obs := &wtObserver{}
		w, stop := wtStart(t, cli, writer.Config{Owner: "ns", Desired: d, Observer: obs})
		defer stop()
		wtEventually(t, 10*time.Second, "published", wtHostsAre(t, cli, app, "ns=10.0.0.1"))
		d.setSynced(false)
		d.remove(app)
		w.Enqueue(app)
		wtEventually(t, 5*time.Second, "not-synced skip reported", func() bool { return obs.hasSkip(app, plan.ReasonNotSynced) })
		if got := wtHosts(t, cli, app); !slices.Equal(got, []string{"ns=10.0.0.1"}) {
			t.Fatalf("deleted while not synced: %v", got)
		}
		d.setSynced(true)
		w.Enqueue(app)
		wtEventually(t, 5*time.Second, "deleted once synced", wtHostsAre(t, cli, app))
	})
}

func TestWriterReplicasElectOneLeader(t *testing.T) {
	e := testenv.StartEtcd(t)
	app := wtName("app")
	da, db := wtWant(wtEP(app, "10.0.0.1")), wtWant(wtEP(app, "10.0.0.1"))
	oa, ob := &wtObserver{}, &wtObserver{}
	// Each replica has its own client, as two CoreDNS pods would.
	wa, stopA := wtStart(t, e.Client(t), writer.Config{Owner: "c1", Desired: da, Observer: oa, Identity: "a"})
	wb, stopB := wtStart(t, e.Client(t), writer.Config{Owner: "c1", Desired: db, Observer: ob, Identity: "b"})
	cli := e.Client(t)
	wtEventually(t, 10*time.Second, "one leader", func() bool { return wa.IsLeader() != wb.IsLeader() })
	wtEventually(t, 10*time.Second, "published", wtHostsAre(t, cli, app, "c1=10.0.0.1"))
	time.Sleep(300 * time.Millisecond)
	if wa.IsLeader() == wb.IsLeader() {
		t.Fatal("not exactly one leader")
	}
	leader, follower, fo, stopLeader, fd := wa, wb, ob, stopA, db
	if wb.IsLeader() {
		leader, follower, fo, stopLeader, fd = wb, wa, oa, stopB, da
	}
	if _, err := follower.Reconcile(wtCtx(t), []string{app}); !errors.Is(err, writer.ErrNotLeader) {
		t.Fatalf("follower Reconcile: %v, want ErrNotLeader", err)
	}
	if fo.get(func(o *wtObserver) bool { return o.commits != 0 || o.leading }) {
		t.Fatal("the follower wrote")
	}

	// The leader stops: it resigns and the follower takes over at once.
	start := time.Now()
	stopLeader()
	wtEventually(t, 5*time.Second, "follower takes over", follower.IsLeader)
	t.Logf("handover after a clean stop took %v", time.Since(start))
	if leader.IsLeader() {
		t.Fatal("a stopped writer still leads")
	}
	fd.set(wtEP(app, "10.0.0.2"))
	follower.Enqueue(app)
	wtEventually(t, 5*time.Second, "the new leader writes", wtHostsAre(t, cli, app, "c1=10.0.0.2"))
}

func TestWriterDeposedLeaderStepsDown(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	app := wtName("app")
	// A long session TTL: the session's keep-alive would tell a deposed replica only TTL/3
	// later; the writer watches its election key and steps down at once. (That a late write
	// from a deposed leader is refused by etcd is TestFencedWriteOfDeposedTerm.)
	da, db := wtWant(wtEP(app, "10.0.0.1")), wtWant(wtEP(app, "10.0.0.1"))
	obsA := &wtObserver{}
	wa, _ := wtStart(t, e.Client(t), writer.Config{Owner: "c1", Desired: da, Observer: obsA, ElectionTTL: 60 * time.Second})
	wtEventually(t, 10*time.Second, "a leads", wa.IsLeader)
	wtEventually(t, 10*time.Second, "published", wtHostsAre(t, cli, app, "c1=10.0.0.1"))
	wb, stopB := wtStart(t, e.Client(t), writer.Config{Owner: "c1", Desired: db, ElectionTTL: 60 * time.Second})

	// Kill a's session: revoke the lease behind its election key, as its expiry would.
	var resp *clientv3.GetResponse
	wtEventually(t, 5*time.Second, "b campaigns", func() bool {
		var err error
		resp, err = cli.Get(wtCtx(t), writer.DefaultLeaderPrefix+"/c1/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		return err == nil && len(resp.Kvs) == 2
	})
	if _, err := cli.Revoke(wtCtx(t), clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	wtEventually(t, 2*time.Second, "a steps down well before its session's keep-alive", func() bool { return !wa.IsLeader() })
	wtEventually(t, 5*time.Second, "b takes over", wb.IsLeader)
	if l := obsA.get(func(o *wtObserver) bool { return o.leading }); l {
		t.Fatal("a still reports it leads")
	}
	if _, err := wa.Reconcile(wtCtx(t), []string{app}); !errors.Is(err, writer.ErrNotLeader) {
		t.Fatalf("deposed replica's Reconcile: %v, want ErrNotLeader", err)
	}
	// Stepping down is not giving up: a wants something else now and, a standby, writes
	// nothing while b leads (b writes what b wants) ...
	var aCommits int
	obsA.get(func(o *wtObserver) bool { aCommits = o.commits; return true })
	da.set(wtEP(app, "10.6.6.6"))
	wa.Enqueue(app)
	db.set(wtEP(app, "10.0.0.2"))
	wb.Enqueue(app)
	wtEventually(t, 5*time.Second, "b writes", wtHostsAre(t, cli, app, "c1=10.0.0.2"))
	if n := obsA.get(func(o *wtObserver) bool { return o.commits != aCommits }); n {
		t.Fatal("the deposed replica committed while b leads")
	}
	// ... and it campaigns again: when b goes, a leads and publishes what it wants.
	stopB()
	wtEventually(t, 10*time.Second, "a leads again after b stopped", wa.IsLeader)
	wtEventually(t, 5*time.Second, "a publishes again", wtHostsAre(t, cli, app, "c1=10.6.6.6"))
	// Committed is reported after the transaction returns, which etcd may show first.
	wtEventually(t, 5*time.Second, "a reports a commit of its second term", func() bool {
		return obsA.get(func(o *wtObserver) bool { return o.commits > aCommits })
	})
	obsA.mu.Lock()
	defer obsA.mu.Unlock()
	if want := []bool{false, true, false, true}; !slices.Equal(obsA.leadCalls, want) {
		t.Errorf("a's Leading calls %v, want %v", obsA.leadCalls, want)
	}
}

func TestWriterAuthConfinedToClusterPrefix(t *testing.T) {
	e := testenv.StartEtcd(t)
	own := "/skydns/cluster/openmcp/eu1/"
	auth := e.EnableAuth(t, "eu1", "secret", own)
	root := e.Client(t)
	// The writer's role also needs its election: readwrite on <leader prefix>/<owner>/.
	lp := writer.DefaultLeaderPrefix + "/eu1/"
	if _, err := root.RoleGrantPermission(wtCtx(t), auth.Role, lp, clientv3.GetPrefixRangeEnd(lp), clientv3.PermissionType(clientv3.PermReadWrite)); err != nil {
		t.Fatal(err)
	}
	app, web, foreign := wtName("app"), wtName("web"), "app.us1."+wtZone
	d := wtWant(wtEP(app, "10.0.0.1"), wtEP(web, "10.0.0.2"), wtEP(foreign, "10.0.0.3"))
	obs := &wtObserver{}
	w, _ := wtStart(t, e.ClientAs(t, auth.User, auth.Password), writer.Config{Owner: "eu1", Desired: d, Observer: obs,
		Zones: []string{"eu1." + wtZone}})
	wtEventually(t, 10*time.Second, "own names published", func() bool {
		return slices.Equal(wtHosts(t, root, app), []string{"eu1=10.0.0.1"}) && slices.Equal(wtHosts(t, root, web), []string{"eu1=10.0.0.2"})
	})
	wtEventually(t, 5*time.Second, "foreign name reported", func() bool { return obs.failedName(foreign) != nil })
	t.Logf("read failure reported: %v", obs.failedName(foreign))
	if got := wtHosts(t, root, foreign); len(got) != 0 {
		t.Fatalf("foreign name written: %v", got)
	}

	// With read access to the whole zone the foreign name fails at write time instead: the
	// transaction holding it is split, and the names beside it still land.
	if _, err := root.RoleGrantPermission(wtCtx(t), auth.Role, "/skydns/", clientv3.GetPrefixRangeEnd("/skydns/"), clientv3.PermissionType(clientv3.PermRead)); err != nil {
		t.Fatal(err)
	}
	d.set(wtEP(app, "10.0.1.1"))
	d.set(wtEP(web, "10.0.1.2"))
	res, err := w.Reconcile(wtCtx(t), []string{app, web, foreign})
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if res.Failed[foreign] == nil || len(res.Failed) != 1 {
		t.Fatalf("failed = %v, want only %s", res.Failed, foreign)
	}
	if !strings.Contains(res.Failed[foreign].Error(), "permission denied") {
		t.Errorf("failure %v is not permission denied", res.Failed[foreign])
	}
	if got := wtHosts(t, root, app); !slices.Equal(got, []string{"eu1=10.0.1.1"}) {
		t.Fatalf("app: %v", got)
	}
	if got := wtHosts(t, root, web); !slices.Equal(got, []string{"eu1=10.0.1.2"}) {
		t.Fatalf("web: %v", got)
	}
	if got := wtHosts(t, root, foreign); len(got) != 0 {
		t.Fatalf("foreign name written: %v", got)
	}
	if !w.IsLeader() {
		t.Fatal("the writer lost its leadership over a permission error")
	}
}

func TestWriterLeaseMode(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	app := wtName("app")
	obs := &wtObserver{}
	const ttl = 6 * time.Second // the shortest lease CheckLease allows with a 1s election TTL
	_, stop := wtStart(t, cli, writer.Config{Owner: "c1", Desired: wtWant(wtEP(app, "10.0.0.1")), Observer: obs, Lease: ttl, ElectionTTL: time.Second})
	wtEventually(t, 10*time.Second, "published", wtHostsAre(t, cli, app, "c1=10.0.0.1"))
	k := record.Key("skydns", app, "c1", "10.0.0.1")
	kv := wtKeys(t, cli)[k]
	if kv.Lease == 0 {
		t.Fatal("key without lease in lease mode")
	}

	// A running writer's records never expire, and keeping the lease alive rewrites nothing.
	time.Sleep(2 * ttl)
	now := wtKeys(t, cli)[k]
	if now == nil || now.ModRevision != kv.ModRevision {
		t.Fatalf("running writer's key after %v: %v (was rev %d)", 2*ttl, now, kv.ModRevision)
	}

	stop()
	start := time.Now()
	wtEventually(t, ttl+3*time.Second, "records expire after the writer stopped", wtHostsAre(t, cli, app))
	took := time.Since(start)
	t.Logf("records gone %v after the writer stopped (lease TTL %v)", took, ttl)
	if took < ttl/2 {
		t.Errorf("records vanished after %v: revoked, not expired", took)
	}
}

func TestWriterAdoptsExternalDNSKeysWithoutGap(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	app := wtName("app")
	base := record.NamePath("skydns", app) + "/"
	// What external-dns --provider=coredns --coredns-strictly-owned --txt-owner-id=c1 left.
	wtPut(t, cli, base+"3e6bee2e", `{"host":"10.0.0.1","text":"","ttl":300,"targetstrip":1,"owner":"c1"}`)
	wtPut(t, cli, base+"a1b2c3d4", `{"host":"10.0.0.2","text":"","ttl":300,"targetstrip":1,"owner":"c1"}`)
	// And a name external-dns published that the sources do not want any more.
	gone := wtName("gone")
	wtPut(t, cli, record.NamePath("skydns", gone)+"/77aa88bb", `{"host":"10.0.0.9","text":"","ttl":300,"targetstrip":1,"owner":"c1"}`)
	start, err := cli.Get(wtCtx(t), base, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}

	// Watch the name from now on, counting its keys after every revision.
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wch := cli.Watch(wctx, base, clientv3.WithPrefix(), clientv3.WithRev(start.Header.Revision+1))
	obs := &wtObserver{}
	wtStart(t, cli, writer.Config{Owner: "c1", Desired: wtWant(wtEP(app, "10.0.0.1", "10.0.0.2")), Observer: obs})
	want := map[string]bool{record.Key("skydns", app, "c1", "10.0.0.1"): true, record.Key("skydns", app, "c1", "10.0.0.2"): true}

	keys := map[string]bool{base + "3e6bee2e": true, base + "a1b2c3d4": true}
	deadline := time.After(10 * time.Second)
	revisions := 0
	for !maps.Equal(keys, want) {
		select {
		case resp := <-wch:
			if err := resp.Err(); err != nil {
				t.Fatal(err)
			}
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypeDelete {
					delete(keys, string(ev.Kv.Key))
				} else {
					keys[string(ev.Kv.Key)] = true
				}
			}
			// etcd never splits one revision across watch responses.
			revisions++
			if len(keys) == 0 {
				t.Fatalf("the name had no record at revision %d", resp.Header.Revision)
			}
		case <-deadline:
			t.Fatalf("not adopted; keys now %v", slices.Sorted(maps.Keys(keys)))
		}
	}
	t.Logf("adopted in %d revision(s)", revisions)
	wtEventually(t, 5*time.Second, "the unwanted external-dns name is removed", wtHostsAre(t, cli, gone))
}

func TestWriterBatchesWithinTxnLimit(t *testing.T) {
	// etcd refuses transactions with more than 8 operations; the writer batches by 8.
	e := testenv.StartEtcd(t, testenv.WithEtcdArgs("--max-txn-ops=8"))
	cli := e.Client(t)
	d := wtWant()
	var names []string
	for i := range 30 {
		n := wtName(fmt.Sprintf("n%02d", i))
		names = append(names, n)
		d.set(wtEP(n, fmt.Sprintf("10.0.0.%d", i)))
	}
	// One name with more targets than a transaction can hold.
	big := wtName("big")
	var bigTargets []string
	for i := range 20 {
		bigTargets = append(bigTargets, fmt.Sprintf("10.1.0.%d", i))
	}
	d.set(wtEP(big, bigTargets...))
	obs := &wtObserver{}
	w, _ := wtStart(t, cli, writer.Config{Owner: "c1", Desired: d, Observer: obs, BatchSize: 8})
	wtEventually(t, 10*time.Second, "synced", func() bool { return obs.syncCount() > 0 })
	if n := len(wtKeys(t, cli)); n != 50 {
		t.Fatalf("%d keys, want 50", n)
	}
	if f := obs.get(func(o *wtObserver) bool { return len(o.failed) != 0 }); f {
		t.Fatalf("failures: %v", obs.failed)
	}

	// Change every target: 30 put+delete pairs. etcd counts a transaction's compares too, one
	// per key and the fence: 7 operations at most, 3 names per transaction.
	for i, n := range names {
		d.set(wtEP(n, fmt.Sprintf("10.2.0.%d", i)))
	}
	res, err := w.Reconcile(wtCtx(t), names)
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("Reconcile: %v %v", err, res.Failed)
	}
	if res.Puts != 30 || res.Deletes != 30 || res.Txns != 10 {
		t.Fatalf("result %+v, want 30 puts and deletes in 10 transactions", res)
	}
	for i, n := range names {
		if got := wtHosts(t, cli, n); !slices.Equal(got, []string{fmt.Sprintf("c1=10.2.0.%d", i)}) {
			t.Fatalf("%s: %v", n, got)
		}
	}
}
