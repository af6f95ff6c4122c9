package writer

import (
	"context"
	"maps"
	"slices"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

// lostNames are the names held by an older claim in exclusive mode, each with the revision it
// was last read at. The claim's owner withdrawing frees the name, and the next claim in line
// takes it at once, not at the next resync: while any name is lost, one watch of deletes per
// zone (the zones the writer may write, so etcd permits it) tells which lost name lost a key
// after its read, and enqueues it. One watch per name would cost etcd a watcher per lost
// name, and a lost apex's own watch would cover the whole zone anyway.
type lostNames struct {
	mu     sync.Mutex
	names  map[string]int64 // lost name -> the revision it was read at
	from   int64            // the running watches' start revision; 0 when none runs
	cancel context.CancelFunc
}

// trackLost records the names just lost to an older claim, read at rev, and forgets the names
// of this reconcile that are no longer lost; it starts the delete watches when the first name
// is lost (or starts them again from an older revision) and ends them with the last.
func (w *Writer) trackLost(ctx context.Context, reconciled []string, conflicts []plan.Conflict, rev int64) {
	lost := make(map[string]bool, len(conflicts))
	for _, c := range conflicts {
		lost[c.Name] = true
	}
	w.mu.Lock()
	watches := w.watches
	w.mu.Unlock()
	l := &w.lost
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range reconciled {
		if lost[n] {
			l.names[n] = rev
		} else {
			delete(l.names, n)
		}
	}
	switch {
	case len(l.names) == 0 || watches == nil:
		l.stopLocked()
	case l.from == 0 || rev+1 < l.from:
		// The running watches (if any) start after this read: deletes in between would be
		// missed. Watch again from here.
		l.stopLocked()
		wctx, cancel := context.WithCancel(ctx)
		l.from, l.cancel = rev+1, cancel
		// Each ends with its context, or with the term's watches when the term ends.
		for _, z := range w.zones() {
			go w.watchLostDeletes(wctx, watches, w.zonePrefix(z), rev+1)
		}
	}
}

// reset forgets every lost name and ends the delete watches; it returns the names.
func (l *lostNames) reset() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := slices.Collect(maps.Keys(l.names))
	clear(l.names)
	l.stopLocked()
	return names
}

// stopLocked ends the delete watches; l.mu is held. It does not wait for them: they hold
// no lock when they see their context end.
func (l *lostNames) stopLocked() {
	if l.cancel != nil {
		l.cancel()
	}
	l.from, l.cancel = 0, nil
}

// watchLostDeletes enqueues each lost name a key of which is deleted under prefix after the
// name's read. A watch that fails (compacted: it may have missed a delete) enqueues every lost
// name to be read again; their reconcile starts the watches again while they are still lost.
func (w *Writer) watchLostDeletes(ctx context.Context, watches *store.Watches, prefix string, from int64) {
	for resp := range watches.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(from), clientv3.WithFilterPut()) {
		if ctx.Err() != nil {
			return
		}
		if resp.Err() != nil {
			w.enqueueAllLost(ctx)
			return
		}
		for _, ev := range resp.Events {
			w.freed(string(ev.Kv.Key), ev.Kv.ModRevision)
		}
	}
}

// freed enqueues the lost name that key (deleted at rev) was a record of, if it was read
// before rev.
func (w *Writer) freed(key string, rev int64) {
	name, ok := record.RecordName(w.cfg.Prefix, key)
	if !ok {
		return
	}
	l := &w.lost
	l.mu.Lock()
	readAt, lost := l.names[name]
	if lost && readAt < rev {
		delete(l.names, name)
	} else {
		lost = false
	}
	l.mu.Unlock()
	if lost {
		w.Enqueue(name)
	}
}

// enqueueAllLost enqueues every lost name and forgets them, ending the watches unless a later
// trackLost already started others.
func (w *Writer) enqueueAllLost(ctx context.Context) {
	names := w.lost.reset()
	if ctx.Err() == nil {
		w.Enqueue(names...)
	}
}

// forgetLost ends the delete watches at the end of a term; the next term's resync finds the
// lost names again.
func (w *Writer) forgetLost() { w.lost.reset() }

// lostCount is how many names are lost to an older claim now.
func (w *Writer) lostCount() int {
	w.lost.mu.Lock()
	defer w.lost.mu.Unlock()
	return len(w.lost.names)
}
