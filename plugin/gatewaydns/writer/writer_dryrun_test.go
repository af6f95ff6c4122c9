package writer_test

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// dryObserver records the changes a dry run tells.
type dryObserver struct {
	wtObserver
	dmu     sync.Mutex
	planned []string
}

func (o *dryObserver) Planned(c plan.Change) {
	o.dmu.Lock()
	o.planned = append(o.planned, c.String())
	o.dmu.Unlock()
}

func (o *dryObserver) plannedCount() int {
	o.dmu.Lock()
	defer o.dmu.Unlock()
	return len(o.planned)
}

// A dry run plans, tells each change once, and writes no record and no lease, with another
// owner's records there and through resyncs and changes.
func TestWriterDryRunTellsThePlanOnceAndWritesNothing(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	app, api, web := wtName("app"), wtName("api"), wtName("web")
	wtPut(t, cli, "/skydns/cluster/openmcp/eu1/web/x1", `{"host":"10.9.9.9","owner":"other"}`)
	d := wtWant(wtEP(app, "10.0.0.1"), wtEP(api, "10.0.0.2"), wtEP(web, "10.0.0.3"))
	obs := &dryObserver{}
	w, _ := wtStart(t, cli, writer.Config{Owner: "c1", Desired: d, Observer: obs, DryRun: true, Lease: 20 * time.Second})
	wtEventually(t, 10*time.Second, "the three changes told", func() bool { return obs.plannedCount() == 3 })

	for range 2 {
		if _, err := w.Resync(wtCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	d.set(wtEP(api, "10.0.0.4"))
	if _, err := w.Reconcile(wtCtx(t), []string{api}); err != nil {
		t.Fatal(err)
	}
	if n := obs.plannedCount(); n != 4 {
		t.Fatalf("told %d changes (%v), want 4: three at start, one for the changed name", n, obs.planned)
	}
	resp, err := cli.Get(wtCtx(t), "/skydns/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Key) != "/skydns/cluster/openmcp/eu1/web/x1" {
		t.Fatalf("a dry run wrote records: %v", resp.Kvs)
	}
	leases, err := cli.Leases(wtCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Leases) != 1 { // the election session's, and no records' lease
		t.Fatalf("%d leases, want the election's alone", len(leases.Leases))
	}
	if obs.get(func(o *wtObserver) bool { return o.puts+o.dels > 0 }) {
		t.Fatal("a dry run reported commits")
	}
}

// A dry-run writer tried beside the owner's real writer elects in an election of its own: the
// real writer leads its owner and writes, whichever started first, and the dry-run one tells
// its plan and writes nothing.
func TestWriterDryRunBesideRealWriterOfTheSameOwner(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	app, api := wtName("app"), wtName("api")
	// The dry run starts first: in the owner's own election it would lead, and the real
	// writer would wait for it forever.
	dryObs := &dryObserver{}
	dry, _ := wtStart(t, e.Client(t), writer.Config{Owner: "c1", Identity: "dry", DryRun: true,
		Desired: wtWant(wtEP(app, "10.0.0.1"), wtEP(api, "10.0.0.2")), Observer: dryObs})
	wtEventually(t, 10*time.Second, "the dry run leads its election and tells its plan",
		func() bool { return dry.IsLeader() && dryObs.plannedCount() == 2 })

	realObs := &wtObserver{}
	real, _ := wtStart(t, e.Client(t), writer.Config{Owner: "c1", Identity: "real",
		Desired: wtWant(wtEP(app, "10.0.0.1")), Observer: realObs})
	wtEventually(t, 10*time.Second, "the real writer leads and publishes", func() bool {
		return real.IsLeader() && slices.Equal(wtHosts(t, cli, app), []string{"c1=10.0.0.1"})
	})
	if !dry.IsLeader() {
		t.Fatal("the dry run lost its own election to the real writer")
	}
	if keys := wtKeys(t, cli); len(keys) != 1 {
		t.Fatalf("keys %v, want app's alone: the dry run wrote", slices.Collect(maps.Keys(keys)))
	}
	for prefix, identity := range map[string]string{
		writer.DefaultLeaderPrefix + "/c1/":         "real",
		writer.DefaultLeaderPrefix + "-dry-run/c1/": "dry",
	} {
		resp, err := cli.Get(wtCtx(t), prefix, clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != identity {
			t.Fatalf("election %s holds %v, want %q's key alone", prefix, resp.Kvs, identity)
		}
	}
	if dryObs.get(func(o *wtObserver) bool { return o.puts+o.dels > 0 }) {
		t.Fatal("the dry run reported commits")
	}
}

// A dry run tells a name's change whole the first time, and afterwards only the operations its
// plan gains (another writer replaced a key of the owner, as external-dns does with a
// dual-stack name at every loop): each would-be put and delete is told, and counted, once.
func TestWriterDryRunTellsOnlyTheOperationsAPlanGains(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	web := wtName("web")
	wtPut(t, cli, "/skydns/cluster/openmcp/eu1/web/old1", `{"host":"10.0.0.9","owner":"c1"}`)
	obs := &dryObserver{}
	w, _ := wtStart(t, cli, writer.Config{Owner: "c1", Desired: wtWant(wtEP(web, "10.0.0.1")), Observer: obs, DryRun: true})
	wtEventually(t, 10*time.Second, "the change told", func() bool { return obs.plannedCount() == 1 })

	if _, err := cli.Delete(wtCtx(t), "/skydns/cluster/openmcp/eu1/web/old1"); err != nil {
		t.Fatal(err)
	}
	wtPut(t, cli, "/skydns/cluster/openmcp/eu1/web/old2", `{"host":"10.0.0.9","owner":"c1"}`)
	for range 2 {
		if _, err := w.Resync(wtCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	obs.dmu.Lock()
	defer obs.dmu.Unlock()
	if len(obs.planned) != 2 || !strings.HasPrefix(obs.planned[0], web+" +") || !strings.HasSuffix(obs.planned[0], " -/skydns/cluster/openmcp/eu1/web/old1") ||
		obs.planned[1] != web+" -/skydns/cluster/openmcp/eu1/web/old2" {
		t.Fatalf("told %q, want the whole change (its put, -old1), then -old2 alone", obs.planned)
	}
}
