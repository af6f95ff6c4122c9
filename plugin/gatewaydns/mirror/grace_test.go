package mirror

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestKeysDeletedByTheirLeasesExpiryAreAnsweredForTheGrace: keys deleted because their lease
// ran out are still answered for Grace; one put again within it is never missing, one that is
// not goes when the grace ends; a key its owner deletes with its lease alive goes at once.
// Each delete is applied once.
func TestKeysDeletedByTheirLeasesExpiryAreAnsweredForTheGrace(t *testing.T) {
	const grace = 3 * time.Second
	e := newEnv(t)
	ix := newIndex()
	o, _ := e.start(t, ix, ix, func(w *Watcher) { w.Grace = grace })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	expiring, err := e.direct.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	live, err := e.direct.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	put := func(key string, lease clientv3.LeaseID) {
		t.Helper()
		if _, err := e.direct.Put(ctx, prefix+key, `{"host":"10.0.0.1"}`, clientv3.WithLease(lease)); err != nil {
			t.Fatal(err)
		}
	}
	put("k/a", expiring.ID)
	put("k/b", expiring.ID)
	put("k/c", live.ID)
	put("k/d", clientv3.NoLease)
	waitFor(t, 5*time.Second, "four keys", func() bool { return ix.Len() == 4 })
	// The watcher reads each new lease's expiry at once; give it that read.
	waitFor(t, 5*time.Second, "the leases read", func() bool { return ix.ExpiredLease(prefix+"k/c", time.Now()) == 0 })

	if _, err := e.direct.Delete(ctx, prefix+"k/c"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Second, "a key deleted by its owner gone at once", func() bool { return ix.Len() == 3 })

	gone := e.direct.Watch(ctx, prefix+"k/b", clientv3.WithFilterPut())
	for resp := range gone {
		if len(resp.Events) > 0 {
			break
		}
	}
	expired := time.Now()
	put("k/a", clientv3.NoLease) // the owner publishes again
	for time.Since(expired) < grace-500*time.Millisecond {
		if n := ix.Len(); n != 3 {
			t.Fatalf("%s after the lease ran out: %d keys answered, want 3 (a put again, b held, d)", time.Since(expired).Round(time.Millisecond), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitFor(t, 2*time.Second, "the key not put again gone when the grace ended", func() bool { return ix.Len() == 2 })
	t.Logf("the key not published again was answered %s after its lease ran out", time.Since(expired).Round(time.Millisecond))
	if got := o.deletes.Load(); got != 2 {
		t.Errorf("%d deletes applied, want 2 (c by its owner, b after the grace)", got)
	}
	onlyStart(t, o)
}
