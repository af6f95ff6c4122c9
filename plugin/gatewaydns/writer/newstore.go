package writer

import (
	"context"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

// A store that changed under the writer is a new store: etcd restored from a snapshot (its
// revisions numbered anew, or bumped and compacted), another cluster behind the endpoints. What
// the writer knows of it (its term's key, what it published, where its watches start) may be
// false there. The client's Lineage (store.Lineage) tells a new store; a campaign then begins
// again, and a leader checks its term and plans every name again against what etcd holds.

// cancelOnNewStore cancels ctx (with cancel) when the client's Lineage finds etcd a new store,
// until the returned func is called, which says whether it did. A campaign begins again then:
// after a restore from a snapshot its wait on the leader's key would watch from a revision
// that the restored store numbers anew, and hear nothing of that key for as long. A standby
// asks etcd nothing while it waits, so at every return of the connection it reads the
// election's keys (linearizable, count only): what shows the Lineage where etcd is.
func (w *Writer) cancelOnNewStore(ctx context.Context, cancel context.CancelFunc) (stop func() bool) {
	_, newStore := w.cfg.Members.Lineage().Generation()
	if newStore == nil {
		return func() bool { return false }
	}
	// The goroutine ends with the campaign's ctx or at stop, at most an attempt later.
	wctx, disarm := context.WithCancel(ctx)
	var fired atomic.Bool
	go func() {
		back := store.Reconnected(wctx, w.client)
		for {
			select {
			case <-newStore:
				if wctx.Err() == nil {
					fired.Store(true)
					cancel()
				}
				return
			case <-back:
				back = store.Reconnected(wctx, w.client)
				rctx, rcancel := context.WithTimeout(wctx, w.cfg.AttemptTimeout)
				_, _ = w.client.Get(rctx, w.el.Prefix()+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
				rcancel()
			case <-wctx.Done():
				return
			}
		}
	}()
	return func() bool {
		disarm()
		return fired.Load()
	}
}

// checkTerm reads the term's election key when the connection comes back, in one attempt: a
// store that lost the key (restored from a snapshot taken before the term) ends the term at
// once rather than at its next write, and the read, linearizable, shows the client's Lineage
// the store's revision. When etcd does not answer, the term's session and its fence still
// guard it.
func (l *termWork) checkTerm(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, l.w.cfg.AttemptTimeout)
	defer cancel()
	resp, err := l.w.client.Get(actx, l.term.Key)
	if err != nil {
		return nil
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != l.term.Rev {
		l.w.depose(l.term)
		return ErrNotLeader
	}
	return nil
}

// storeChanged is etcd found to be a new store: what this leader wrote may be gone, and what
// it deleted back. The term is checked (its key may be one the snapshot brought back for
// another), and everything planned again at once against what etcd holds now: what the backup
// lacks is published again, what it brought back is withdrawn.
func (l *termWork) storeChanged(ctx context.Context) error {
	_, l.newStore = l.w.cfg.Members.Lineage().Generation()
	if err := l.checkTerm(ctx); err != nil {
		return err
	}
	l.delay.Reset()
	l.resync.Reset(0)
	return nil
}

// watchKey deposes term as soon as its election key is deleted (resigned by hand, its
// session's lease revoked or expired), without waiting for the session's next keep-alive.
// A compaction of the history the watch needs (after a reconnection, or a restore with
// --mark-compacted) tells compacted, which plans everything again; the key is then read (gone:
// deposed) and watched again from the read.
func (w *Writer) watchKey(ctx context.Context, watches *store.Watches, term *Term, compacted chan<- struct{}) {
	from := term.Rev
	for {
		oldest := int64(0)
		for ev := range watches.Watch(ctx, term.Key, clientv3.WithRev(from)) {
			for _, e := range ev.Events {
				if e.Type == clientv3.EventTypeDelete {
					w.depose(term)
					return
				}
			}
			if ev.CompactRevision != 0 {
				oldest = ev.CompactRevision
			}
			if ev.Err() != nil {
				break
			}
		}
		if oldest == 0 || ctx.Err() != nil {
			return // canceled: the session and the fence still guard the term
		}
		select {
		case compacted <- struct{}{}:
		default:
		}
		from = oldest
		rctx, cancel := context.WithTimeout(ctx, w.cfg.AttemptTimeout)
		resp, err := w.client.Get(rctx, term.Key)
		cancel()
		switch {
		case err != nil: // watched from the oldest revision left; the fence guards the gap
		case len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != term.Rev:
			w.depose(term)
			return
		default:
			from = resp.Header.Revision + 1
		}
	}
}
