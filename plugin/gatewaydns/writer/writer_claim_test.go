package writer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// wtStartTogether makes one writer per config and starts them all at one moment, so that they
// read, plan and commit the same names at the same time. stop ends them all.
func wtStartTogether(t *testing.T, cli *clientv3.Client, cfgs []writer.Config) (ws []*writer.Writer, stop func()) {
	t.Helper()
	start := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	for _, cfg := range cfgs {
		cfg.ElectionTTL, cfg.Timeout = 5*time.Second, 5*time.Second
		w, err := writer.New(cli, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
		running.Go(func() {
			<-start
			if err := w.Run(ctx); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	close(start)
	stop = sync.OnceFunc(func() { cancel(); running.Wait() })
	t.Cleanup(stop)
	return ws, stop
}

// wtHolders is name -> the owners with a key one level below it, for every name under zone.
func wtHolders(t *testing.T, cli *clientv3.Client) map[string][]string {
	t.Helper()
	holders := make(map[string][]string)
	for k, kv := range wtKeys(t, cli) {
		n, ok := record.RecordName("skydns", k)
		if !ok {
			continue
		}
		o := record.OwnerOf(kv.Value)
		if !slices.Contains(holders[n], o) {
			holders[n] = append(holders[n], o)
		}
	}
	for _, os := range holders {
		slices.Sort(os)
	}
	return holders
}

// conflictsByName counts the conflicts an observer was told, per name.
func (o *wtObserver) conflictsByName() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := make(map[string]int)
	for _, c := range o.conflicts {
		m[c.Name]++
	}
	return m
}

// Four owners start on the same 500 names at the same moment, in exclusive mode: etcd lets
// exactly one claim per name through, each loser reports each lost name once, and a name its
// holder gives up goes to exactly one of the others. Five times over, as a race that passes
// once by luck proves nothing.
func TestWriterExclusiveClaimRaceLeavesOneOwnerPerName(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	owners := []string{"c1", "c2", "c3", "c4"}
	const nNames, nFreed = 500, 40

	for round := 1; round <= 5; round++ {
		names := make([]string, nNames)
		for i := range names {
			names[i] = wtName(fmt.Sprintf("r%d-n%03d", round, i))
		}
		desired := make([]*wtDesired, len(owners))
		observers := make([]*wtObserver, len(owners))
		cfgs := make([]writer.Config, len(owners))
		for o, owner := range owners {
			var eps []record.Endpoint
			for i, n := range names {
				eps = append(eps, wtEP(n, fmt.Sprintf("10.%d.%d.%d", o+1, i/250, i%250)))
			}
			desired[o], observers[o] = wtWant(eps...), &wtObserver{}
			cfgs[o] = writer.Config{Owner: owner, Desired: desired[o], Observer: observers[o], Conflicts: plan.Exclusive}
		}
		ws, stop := wtStartTogether(t, cli, cfgs)

		// settled: every name has exactly one holder, and every other owner reported losing it.
		settled := func() (map[string]string, bool) {
			holder := make(map[string]string, nNames)
			for n, hs := range wtHolders(t, cli) {
				if len(hs) != 1 {
					return nil, false
				}
				holder[n] = hs[0]
			}
			for _, n := range names {
				h, ok := holder[n]
				if !ok {
					return nil, false
				}
				for o, owner := range owners {
					if owner != h && observers[o].conflictsByName()[n] == 0 {
						return nil, false
					}
				}
			}
			return holder, true
		}
		var holder map[string]string
		wtEventually(t, 30*time.Second, fmt.Sprintf("round %d: one holder per name, every loser told", round), func() bool {
			var ok bool
			holder, ok = settled()
			return ok
		})
		// A full resync of every writer (as every few minutes) reports nothing again.
		for o, w := range ws {
			if _, err := w.Resync(wtCtx(t)); err != nil {
				t.Fatalf("round %d: resync of %s: %v", round, owners[o], err)
			}
		}
		won := make(map[string]int)
		for _, n := range names {
			won[holder[n]]++
		}
		for o, owner := range owners {
			for n, count := range observers[o].conflictsByName() {
				switch {
				case holder[n] == owner:
					t.Errorf("round %d: %s holds %s but reported losing it", round, owner, n)
				case count != 1:
					t.Errorf("round %d: %s reported losing %s %d times, want once", round, owner, n, count)
				}
			}
		}
		t.Logf("round %d: names won per owner %v", round, won)

		// The holders give up the first nFreed names: each goes to exactly one other owner.
		freed := names[:nFreed]
		for _, n := range freed {
			o := slices.Index(owners, holder[n])
			desired[o].remove(n)
			ws[o].Enqueue(n)
		}
		wtEventually(t, 10*time.Second, fmt.Sprintf("round %d: freed names taken over by one other owner each", round), func() bool {
			hs := wtHolders(t, cli)
			for _, n := range freed {
				if len(hs[n]) != 1 || hs[n][0] == holder[n] {
					return false
				}
			}
			return true
		})

		stop()
		if _, err := cli.Delete(wtCtx(t), "/skydns/", clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
	}
}

// A lost name is reported once per object: a resync tells nobody again, and an object that
// joins the name later is told, alone.
func TestWriterTellsEachObjectOfALostNameOnce(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	app := wtName("app")
	d1 := wtWant(wtEP(app, "10.0.0.1"))
	w1, _ := wtStart(t, cli, writer.Config{Owner: "c1", Desired: d1, Conflicts: plan.Exclusive})
	wtEventually(t, 10*time.Second, "c1 published", wtHostsAre(t, cli, app, "c1=10.0.0.1"))

	r1 := record.ObjectRef{Kind: "HTTPRoute", Namespace: "shop", Name: "r1"}
	r2 := record.ObjectRef{Kind: "HTTPRoute", Namespace: "shop", Name: "r2"}
	ep := record.Endpoint{Name: app, Targets: []string{"10.0.0.2"}, TTL: 30, Sources: []record.ObjectRef{r1}}
	d2, obs2 := wtWant(ep), &wtObserver{}
	w2, _ := wtStart(t, cli, writer.Config{Owner: "c2", Desired: d2, Observer: obs2, Conflicts: plan.Exclusive})
	told := func() [][]record.ObjectRef {
		obs2.mu.Lock()
		defer obs2.mu.Unlock()
		var out [][]record.ObjectRef
		for _, c := range obs2.conflicts {
			out = append(out, c.Sources)
		}
		return out
	}
	wtEventually(t, 10*time.Second, "c2 reports the conflict", func() bool { return len(told()) == 1 })
	if _, err := w2.Resync(wtCtx(t)); err != nil {
		t.Fatal(err)
	}
	ep.Sources = []record.ObjectRef{r1, r2}
	d2.set(ep)
	if _, err := w2.Reconcile(wtCtx(t), []string{app}); err != nil {
		t.Fatal(err)
	}
	want := [][]record.ObjectRef{{r1}, {r2}}
	if got := told(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("conflicts told on %v, want %v", got, want)
	}
	// Told once, but counted while it lasts: the gauge of lost names says 1 until c2 holds it.
	if p := obs2.get(func(o *wtObserver) bool { return o.problems == [2]int{1, 0} }); !p {
		t.Fatalf("problems %v, want 1 lost name", obs2.problems)
	}
	d1.remove(app)
	w1.Enqueue(app)
	wtEventually(t, 5*time.Second, "c2 took the freed name", wtHostsAre(t, cli, app, "c2=10.0.0.2"))
	wtEventually(t, 5*time.Second, "no lost name counted", func() bool {
		return obs2.get(func(o *wtObserver) bool { return o.problems == [2]int{0, 0} })
	})
}

// Names lost to an older claim cost etcd one watch per zone, not one per name (2000 lost
// names once made 2000 watchers), and each is still taken within seconds of its winner
// withdrawing, one name alone or all at once.
func TestLostNamesCostOneWatchPerZoneAndEachIsTakenOnceFreed(t *testing.T) {
	const n = 2000
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	var eps []record.Endpoint
	for i := range n {
		eps = append(eps, wtEP(wtName(fmt.Sprintf("lost%04d", i)), "10.0.0.1"))
	}
	d1 := wtWant(eps...)
	w1, _ := wtStart(t, cli, writer.Config{Owner: "c1", Desired: d1, Zones: []string{"eu1." + wtZone}})
	first := eps[0].Name
	wtEventually(t, 30*time.Second, "c1 published", wtHostsAre(t, cli, eps[n-1].Name, "c1=10.0.0.1"))
	before, err := e.Watchers(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}

	var eps2 []record.Endpoint
	for _, ep := range eps {
		eps2 = append(eps2, wtEP(ep.Name, "10.0.0.2"))
	}
	w2, _ := wtStart(t, cli, writer.Config{Owner: "c2", Desired: wtWant(eps2...), Zones: []string{"eu1." + wtZone}, Conflicts: plan.Exclusive})
	wtEventually(t, 30*time.Second, "c2 lost every name", func() bool { return w2.LostNames() == n })
	during, err := e.Watchers(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// c2's term adds its key's watch and the lost names' watch of its one zone.
	if added := during - before; added > 2 {
		t.Errorf("with %d names lost, etcd serves %d watchers more than before (%d -> %d), want at most 2", n, added, before, during)
	}
	t.Logf("etcd watchers: %d before c2, %d with c2's %d lost names", before, during, n)

	// The winner withdraws one name: c2 takes it by itself.
	start := time.Now()
	d1.remove(first)
	w1.Enqueue(first)
	wtEventually(t, 3*time.Second, "c2 took the name freed alone", wtHostsAre(t, cli, first, "c2=10.0.0.2"))
	t.Logf("a name freed alone taken after %v", time.Since(start).Round(time.Millisecond))

	// Then all of them.
	start = time.Now()
	for _, ep := range eps[1:] {
		d1.remove(ep.Name)
	}
	for _, ep := range eps[1:] {
		w1.Enqueue(ep.Name)
	}
	owners := func() map[string]int {
		count := map[string]int{}
		for _, kv := range wtKeys(t, cli) {
			count[record.OwnerOf(kv.Value)]++
		}
		return count
	}
	wtEventually(t, 30*time.Second, "c1 withdrew every name", func() bool { return owners()["c1"] == 0 })
	withdrawn := time.Since(start)
	wtEventually(t, 30*time.Second, "c2 took every freed name", func() bool { return owners()["c2"] == n })
	wtEventually(t, 5*time.Second, "c2 holds no name lost", func() bool { return w2.LostNames() == 0 })
	t.Logf("%d names withdrawn by c1 after %v, all taken by c2 after %v", n-1, withdrawn.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	// The watch's cancel reaches etcd after LostNames says none: etcd's count follows it.
	after := during
	wtEventually(t, 5*time.Second, "the lost names' watch gone from etcd", func() bool {
		n, err := e.Watchers(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		after = n
		return n <= during-1
	})
	t.Logf("with no name lost any more, etcd serves %d watchers (%d with the lost names' watch)", after, during)
}
