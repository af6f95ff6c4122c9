package mirror

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
)

// snapshot is what the Sink holds under the prefix and the revision that is, read by the
// session between two Applies so that the two go together.
type snapshot struct {
	rev    int64
	gen    int64
	digest index.Digest
	ok     bool
}

func (w *Watcher) snapshot(rev int64) snapshot {
	d, ok := w.Sink.(Digester)
	if !ok {
		return snapshot{}
	}
	digest, loaded := d.Digest(w.Prefix)
	return snapshot{rev: rev, gen: w.generation, digest: digest, ok: loaded}
}

// checkLoop compares the Sink with etcd every CheckEvery: the session hands it the Sink's
// digest with the revision applied, and it reads etcd keys-only at that revision, off the
// session's goroutine so events keep being applied. A difference makes the session reload.
func (w *Watcher) checkLoop(ctx context.Context) {
	if _, ok := w.Sink.(Digester); !ok {
		return
	}
	every := w.CheckEvery
	if every <= 0 {
		every = defaultCheckEvery
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		reply := make(chan snapshot, 1)
		select {
		case <-ctx.Done():
			return
		case w.snapshots <- reply: // waits for a session: none runs while loading or cut off
		}
		snap := <-reply
		if !snap.ok {
			continue
		}
		if err := w.check(ctx, snap); err != nil && ctx.Err() == nil {
			w.Observer.Failed("check", err)
		}
	}
}

func (w *Watcher) check(ctx context.Context, snap snapshot) error {
	var etcd index.Digest
	_, err := w.pages(ctx, snap.rev, true, func(resp *clientv3.GetResponse) {
		for _, kv := range resp.Kvs {
			etcd.Add(string(kv.Key), kv.ModRevision)
		}
	})
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return nil // the session will meet the compaction itself; try again next round
	case errors.Is(err, rpctypes.ErrFutureRev):
		// etcd has not reached a revision it gave the index: its history went back. Not a
		// failed check, but the surest inconsistency there is.
		w.Log.Warningf("etcd has not reached revision %d of %s, which the index holds: its history went back (restored from a snapshot?); reloading", snap.rev, w.Prefix)
	case err != nil:
		return err
	case etcd == snap.digest:
		return nil
	default:
		w.Log.Warningf("Index of %s differs from etcd at revision %d (%d keys held, %d in etcd); reloading",
			w.Prefix, snap.rev, snap.digest.Keys, etcd.Keys)
	}
	select {
	case w.inconsistent <- snap.gen:
	default:
	}
	return nil
}
