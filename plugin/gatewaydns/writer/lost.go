package writer

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

// trackLost watches the names just lost to an older claim, from the revision they were read
// at, and stops watching the names of this reconcile that are no longer lost.
func (w *Writer) trackLost(ctx context.Context, reconciled []string, conflicts []plan.Conflict, rev int64) {
	lost := make(map[string]bool, len(conflicts))
	for _, c := range conflicts {
		lost[c.Name] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range reconciled {
		lw, watched := w.lost[n]
		switch {
		case lost[n] && !watched && w.watches != nil:
			wctx, cancel := context.WithCancel(ctx)
			lw = &lostWatch{cancel: cancel}
			w.lost[n] = lw
			go w.watchLost(wctx, w.watches, lw, n, rev+1)
		case !lost[n] && watched:
			lw.cancel()
			delete(w.lost, n)
		}
	}
}

// watchLost enqueues name when a key of it is deleted after rev.
func (w *Writer) watchLost(ctx context.Context, watches *store.Watches, lw *lostWatch, name string, rev int64) {
	base := record.NamePath(w.cfg.Prefix, name) + "/"
	for resp := range watches.Watch(ctx, base, clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithFilterPut()) {
		if ctx.Err() != nil {
			return
		}
		if len(resp.Events) > 0 || resp.Err() != nil {
			// A compacted watch may have missed the delete: look again. The name's reconcile
			// starts a new watch while it is still lost.
			w.mu.Lock()
			if w.lost[name] == lw {
				delete(w.lost, name)
			}
			w.mu.Unlock()
			lw.cancel()
			w.Enqueue(name)
			return
		}
	}
}

// forgetLost stops every lost name's watch at the end of a term.
func (w *Writer) forgetLost() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for n, lw := range w.lost {
		lw.cancel()
		delete(w.lost, n)
	}
}
