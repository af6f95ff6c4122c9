package writer_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/txtregistry"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// wtRegistryValue is a TXT registry record as external-dns's coredns provider stores it.
func wtRegistryValue(owner, resource string) string {
	return fmt.Sprintf(`{"text":"\"heritage=external-dns,external-dns/owner=%s,external-dns/resource=%s\"","targetstrip":1}`, owner, resource)
}

type wtAdoptions struct {
	wtObserver
	adopted []int
}

func (o *wtAdoptions) Adopted(n int) { o.mu.Lock(); o.adopted = append(o.adopted, n); o.mu.Unlock() }

// TestWriterTakesOverExternalDNSTXTRegistry: what external-dns with its default TXT registry
// (no strict ownership) left in etcd for owner c1 becomes the writer's at its first resync: the
// ownerless records the registry assigns to c1 are replaced by the writer's keys, the registry
// records deleted, a name the sources no longer want removed, and what other owners (or no
// registry record) hold is left alone.
func TestWriterTakesOverExternalDNSTXTRegistry(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	reg := &txtregistry.Config{Owner: "c1"}
	path := func(n string) string { return record.NamePath("skydns", n) + "/" }
	app, web, old, gone, foreign, loose := wtName("app"), wtName("web"), wtName("old"), wtName("gone"), wtName("foreign"), wtName("loose")

	// app: an address, and its registry record a-app.
	wtPut(t, cli, path(app)+"1a2b3c4d", `{"host":"10.0.0.1","ttl":300,"targetstrip":1}`)
	wtPut(t, cli, path(reg.Name(app, "a"))+"5e6f7a8b", wtRegistryValue("c1", "httproute/shop/app"))
	// web: a CNAME, registered as cname-web.
	wtPut(t, cli, path(web)+"0c0c0c0c", `{"host":"lb.example.net","ttl":300,"targetstrip":1}`)
	wtPut(t, cli, path(reg.Name(web, "cname"))+"0d0d0d0d", wtRegistryValue("c1", "httproute/shop/web"))
	// old: external-dns's old format, the registry text in the record's own key, which the stock
	// plugin answers as TXT instead of the CNAME (external-dns #4953).
	wtPut(t, cli, path(old)+"0e0e0e0e", `{"host":"lb.example.net","text":"\"heritage=external-dns,external-dns/owner=c1,external-dns/resource=httproute/shop/old\"","ttl":300,"targetstrip":1}`)
	// gone: published by external-dns for c1, not wanted by the sources any more.
	wtPut(t, cli, path(gone)+"0f0f0f0f", `{"host":"10.0.0.9","ttl":300,"targetstrip":1}`)
	wtPut(t, cli, path(reg.Name(gone, "a"))+"1f1f1f1f", wtRegistryValue("c1", "httproute/shop/gone"))
	// foreign: registered to another external-dns; loose: no registry record at all.
	wtPut(t, cli, path(foreign)+"2a2a2a2a", `{"host":"10.0.0.7","ttl":300,"targetstrip":1}`)
	wtPut(t, cli, path(reg.Name(foreign, "a"))+"2b2b2b2b", wtRegistryValue("us1", "httproute/shop/foreign"))
	wtPut(t, cli, path(loose)+"3a3a3a3a", `{"host":"10.0.0.8","ttl":300,"targetstrip":1}`)

	before := wtKeys(t, cli)
	var rev int64
	for _, kv := range before {
		rev = max(rev, kv.ModRevision)
	}
	puts := wtCountPuts(t, cli, rev+1)
	obs := &wtAdoptions{}
	d := wtWant(wtEP(app, "10.0.0.1"), wtEP(web, "lb.example.net"), wtEP(old, "lb.example.net"), wtEP(foreign, "10.0.0.7"))
	wtStart(t, cli, writer.Config{Owner: "c1", Desired: d, Observer: obs, Registry: reg})
	wtEventually(t, 10*time.Second, "synced", func() bool { return obs.syncCount() > 0 })

	want := []string{
		record.Key("skydns", app, "c1", "10.0.0.1"),
		record.Key("skydns", web, "c1", "lb.example.net"),
		record.Key("skydns", old, "c1", "lb.example.net"),
		record.Key("skydns", foreign, "c1", "10.0.0.7"),
		path(foreign) + "2a2a2a2a", path(reg.Name(foreign, "a")) + "2b2b2b2b", // us1's
		path(loose) + "3a3a3a3a", // nobody's
	}
	slices.Sort(want)
	if got := slices.Sorted(maps.Keys(wtKeys(t, cli))); !slices.Equal(got, want) {
		t.Fatalf("keys after the takeover:\n got %q\nwant %q", got, want)
	}
	if n := puts(); n != 4 {
		t.Errorf("%d puts, want 4: each key of the writer written once", n)
	}
	obs.mu.Lock()
	adopted := obs.adopted
	obs.mu.Unlock()
	// app's record and registry record, web's two, old's one, gone's two.
	if total := sum(adopted); total != 7 {
		t.Errorf("adopted %v keys, want 7 in all", adopted)
	}
}

// TestWriterTakesOverWhatExternalDNSWritesJustAfterTheTakeover: an external-dns still running
// may be inside a sync loop when the writer takes its keys over, and write what the loop
// planned afterwards (here a key of app and its registry record). The writer takes those over
// at a resync that follows the takeover within seconds, not at the next periodic one.
func TestWriterTakesOverWhatExternalDNSWritesJustAfterTheTakeover(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	reg := &txtregistry.Config{Owner: "c1"}
	path := func(n string) string { return record.NamePath("skydns", n) + "/" }
	app := wtName("app")
	wtPut(t, cli, path(app)+"1a2b3c4d", `{"host":"10.0.0.1","targetstrip":1}`)
	wtPut(t, cli, path(reg.Name(app, "a"))+"5e6f7a8b", wtRegistryValue("c1", "httproute/shop/app"))
	obs := &wtAdoptions{}
	wtStart(t, cli, writer.Config{Owner: "c1", Desired: wtWant(wtEP(app, "10.0.0.1")), Observer: obs, Registry: reg})
	own := record.Key("skydns", app, "c1", "10.0.0.1")
	only := func() bool { return slices.Equal(slices.Sorted(maps.Keys(wtKeys(t, cli))), []string{own}) }
	wtEventually(t, 10*time.Second, "the takeover", only)

	// The loop that was in flight: its writes land after the takeover.
	wtPut(t, cli, path(app)+"9c8d7e6f", `{"host":"10.0.0.1","targetstrip":1}`)
	wtPut(t, cli, path(reg.Name(app, "a"))+"0a1b2c3d", wtRegistryValue("c1", "httproute/shop/app"))
	start := time.Now()
	wtEventually(t, 20*time.Second, "the late keys taken over", only)
	t.Logf("the late keys taken over %v after they were written", time.Since(start).Round(time.Millisecond))
	if total := func() int { obs.mu.Lock(); defer obs.mu.Unlock(); return sum(obs.adopted) }(); total != 4 {
		t.Errorf("adopted %d keys, want 4: two at the takeover, two after", total)
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// TestWriterReadsRegistryNamesWithinTxnLimit: with a registry each name is read with its seven
// or eight registry names (a wildcard name with a wildcard replacement has one more); the
// reads still fit etcd's --max-txn-ops, so no name fails.
func TestWriterReadsRegistryNamesWithinTxnLimit(t *testing.T) {
	e := testenv.StartEtcd(t, testenv.WithEtcdArgs("--max-txn-ops=8"))
	cli := e.Client(t)
	reg := &txtregistry.Config{Owner: "c1", WildcardReplacement: "wild"}
	d := wtWant()
	for i := range 10 {
		d.set(wtEP(wtName(fmt.Sprintf("n%d", i)), fmt.Sprintf("10.0.0.%d", i)))
	}
	wildcard := wtName("*.apps")
	d.set(wtEP(wildcard, "10.0.1.1"))
	// external-dns's record of the wildcard name, and its registry record at a-wild.apps.
	wtPut(t, cli, record.NamePath("skydns", wildcard)+"/1a1a1a1a", `{"host":"10.0.1.1","targetstrip":1}`)
	wtPut(t, cli, record.NamePath("skydns", reg.Name(wildcard, "a"))+"/2b2b2b2b", wtRegistryValue("c1", "httproute/shop/apps"))
	obs := &wtAdoptions{}
	w, _ := wtStart(t, cli, writer.Config{Owner: "c1", Desired: d, Observer: obs, BatchSize: 8, Registry: reg})
	wtEventually(t, 10*time.Second, "synced", func() bool { return obs.syncCount() > 0 })
	res, err := w.Resync(wtCtx(t))
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("Resync: %v, failed %v", err, res.Failed)
	}
	if got := wtHosts(t, cli, wildcard); !slices.Equal(got, []string{"c1=10.0.1.1"}) {
		t.Errorf("%s: %v, want only the writer's key", wildcard, got)
	}
	if n := len(wtKeys(t, cli)); n != 11 {
		t.Errorf("%d keys, want 11: one per name, external-dns's and its registry record gone", n)
	}
}
