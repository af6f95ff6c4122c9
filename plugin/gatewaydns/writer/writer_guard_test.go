package writer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// seenTxn is one transaction a writer committed, as countingKV saw it.
type seenTxn struct {
	cmps      []clientv3.Cmp
	ops       int
	succeeded bool
}

// countingKV records every transaction made through it: what a claim costs etcd.
type countingKV struct {
	clientv3.KV
	mu   sync.Mutex
	txns []seenTxn
}

func (k *countingKV) Txn(ctx context.Context) clientv3.Txn {
	return &countingTxn{Txn: k.KV.Txn(ctx), kv: k}
}

func (k *countingKV) seen() []seenTxn {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]seenTxn(nil), k.txns...)
}

type countingTxn struct {
	clientv3.Txn
	kv   *countingKV
	seen seenTxn
}

func (t *countingTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.seen.cmps = append(t.seen.cmps, cs...)
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *countingTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.seen.ops += len(ops)
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *countingTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *countingTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.Txn.Commit()
	if err == nil {
		t.seen.succeeded = resp.Succeeded
		t.kv.mu.Lock()
		t.kv.txns = append(t.kv.txns, t.seen)
		t.kv.mu.Unlock()
	}
	return resp, err
}

// fillZone writes n names of owner "other" under the zone eu1.<wtZone>, in transactions of 100.
func fillZone(t *testing.T, cli *clientv3.Client, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := w * 100; i < n; i += 400 {
				var ops []clientv3.Op
				for j := i; j < min(i+100, n); j++ {
					name := wtName(fmt.Sprintf("n%06d", j))
					ops = append(ops, clientv3.OpPut(record.Key("skydns", name, "other", "192.0.2.1"), `{"host":"192.0.2.1","owner":"other"}`))
				}
				if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// The apex of a zone of 100k names is claimed on the first try while others write in the zone
// 10 times a second, and the claim's transaction compares a few keys, none a range: a claim
// once compared the name's whole key range, which for the apex is the zone, read by etcd on
// every member while applying it, and made stale by any write there (three tries, then Failed,
// at every resync).
func TestAnApexClaimIsOneTryWhateverTheZoneHoldsAndWhoWritesThere(t *testing.T) {
	const names = 100_000
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	start := time.Now()
	fillZone(t, cli, names)
	t.Logf("%d names written in %v", names, time.Since(start).Round(time.Millisecond))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var churn sync.WaitGroup
	churn.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_, _ = cli.Put(ctx, record.Key("skydns", wtName(fmt.Sprintf("churn%d", i%50)), "other", "192.0.2.2"), `{"host":"192.0.2.2","owner":"other"}`)
		}
	})
	defer churn.Wait()
	defer cancel()

	wcli := e.Client(t)
	started := time.Now()
	counted := &countingKV{KV: wcli.KV}
	wcli.KV = counted
	apex := "eu1." + wtZone
	obs := &wtObserver{}
	w, _ := wtStart(t, wcli, writer.Config{Owner: "apex", Desired: wtWant(wtEP(apex, "10.0.0.1")), Observer: obs, Zones: []string{apex}})
	key := record.Key("skydns", apex, "apex", "10.0.0.1")
	wtEventually(t, 60*time.Second, "the apex published", func() bool {
		resp, err := cli.Get(ctx, key, clientv3.WithCountOnly())
		return err == nil && resp.Count == 1
	})
	if err := obs.failedName(apex); err != nil {
		t.Errorf("the apex failed on the way: %v", err)
	}
	var claims []seenTxn
	for _, txn := range counted.seen() {
		for _, c := range txn.cmps {
			if pc := c.GetCompare(); len(pc.RangeEnd) > 0 {
				t.Errorf("a transaction compares the key range %q..%q", pc.Key, pc.RangeEnd)
			}
		}
		if txn.ops > 0 && len(txn.cmps) > 1 {
			claims = append(claims, txn)
		}
	}
	if len(claims) != 1 || !claims[0].succeeded {
		t.Fatalf("the apex's claim took %d transactions (%+v), want one that succeeds", len(claims), claims)
	}
	t.Logf("the apex claimed in one transaction of %d compares and %d operations, %v after the writer started, under %d writes/s in a zone of %d names",
		len(claims[0].cmps), claims[0].ops, time.Since(started).Round(time.Millisecond), 10, names)
	if len(claims[0].cmps) > 3 {
		t.Errorf("the claim compares %d keys, want at most 3 (fence, guard, the key put)", len(claims[0].cmps))
	}
	_ = w
}

// Claim guards need readwrite on their names' paths below the claim prefix (deploy/etcd/
// roles.sh). A role without it still publishes: its claims compare key ranges as before, and
// the Observer is told once. A role with it keeps a guard per claimed name, withdrawn with it.
func TestClaimGuardsNeedTheirPermissionOrFallBackToRangeCompares(t *testing.T) {
	e := testenv.StartEtcd(t)
	own := "/skydns/cluster/openmcp/eu1/"
	auth := e.EnableAuth(t, "eu1", "secret", own)
	root := e.Client(t)
	grant := func(prefix string) {
		t.Helper()
		if _, err := root.RoleGrantPermission(wtCtx(t), auth.Role, prefix, clientv3.GetPrefixRangeEnd(prefix), clientv3.PermissionType(clientv3.PermReadWrite)); err != nil {
			t.Fatal(err)
		}
	}
	grant(writer.DefaultLeaderPrefix + "/eu1/")
	guards := writer.DefaultClaimPrefix + own
	guardOf := func(name string) string { return writer.DefaultClaimPrefix + record.NamePath("skydns", name) + "/" }
	count := func(prefix string) int64 {
		t.Helper()
		resp, err := root.Get(wtCtx(t), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Count
	}

	app, web := wtName("app"), wtName("web")
	d := wtWant(wtEP(app, "10.0.0.1"))
	obs := &wtObserver{}
	w, stop := wtStart(t, e.ClientAs(t, auth.User, auth.Password), writer.Config{Owner: "eu1", Desired: d, Observer: obs, Zones: []string{"eu1." + wtZone}})
	wtEventually(t, 10*time.Second, "app published without the guards' permission", wtHostsAre(t, root, app, "eu1=10.0.0.1"))
	if n := obs.guardRefusals(); n != 1 {
		t.Errorf("the Observer was told %d times that guards are refused, want once", n)
	}
	d.set(wtEP(web, "10.0.0.2"))
	w.Enqueue(web)
	wtEventually(t, 10*time.Second, "web published without the guards' permission", wtHostsAre(t, root, web, "eu1=10.0.0.2"))
	if n := obs.guardRefusals(); n != 1 {
		t.Errorf("after a second claim the Observer was told %d times, want still once", n)
	}
	if n := count(guards); n != 0 {
		t.Errorf("%d guard keys under %s without the permission", n, guards)
	}
	stop()

	grant(guards)
	shop := wtName("shop")
	d2 := wtWant(wtEP(app, "10.0.0.1"), wtEP(web, "10.0.0.2"), wtEP(shop, "10.0.0.3"))
	obs2 := &wtObserver{}
	w2, _ := wtStart(t, e.ClientAs(t, auth.User, auth.Password), writer.Config{Owner: "eu1", Desired: d2, Observer: obs2, Zones: []string{"eu1." + wtZone}})
	wtEventually(t, 10*time.Second, "shop published with the guards' permission", wtHostsAre(t, root, shop, "eu1=10.0.0.3"))
	if n := count(guardOf(shop)); n != 1 || obs2.guardRefusals() != 0 {
		t.Errorf("with the permission: shop's guard keys %d, refusals told %d; want 1 and 0", n, obs2.guardRefusals())
	}
	d2.remove(shop)
	w2.Enqueue(shop)
	wtEventually(t, 10*time.Second, "shop withdrawn", wtHostsAre(t, root, shop))
	if n := count(guardOf(shop)); n != 0 {
		t.Errorf("shop withdrawn, its guard is still there")
	}
	_ = w
}
