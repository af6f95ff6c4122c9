package mirror

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/statelog"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

// reach follows whether etcd answers, to tell the observer and the log of transitions only:
// one line when it stops answering, one when it is back, however many retries lie between.
type reach struct {
	// mu makes reading since and changing the state one step: a failure that finds the last
	// answer old enough must not call etcd unreachable after an answer that came meanwhile.
	mu    sync.Mutex
	state statelog.State[reachState]
	since time.Time // last answer, or the start
	down  bool      // told unreachable: the state, for asking why only before telling it
}

type reachState int

const (
	reachUnknown reachState = iota
	reachUp
	reachDown
)

// answered is called whenever etcd answers anything.
func (w *Watcher) answered() {
	w.reach.mu.Lock()
	defer w.reach.mu.Unlock()
	down := time.Since(w.reach.since)
	w.reach.since = time.Now()
	w.reach.down = false
	w.reach.state.Set(reachUp, func(prev reachState) {
		if prev == reachDown {
			w.Log.Infof("etcd answers again for %s, after %s", w.Prefix, down.Round(time.Second))
		}
		w.Observer.Reachable(true)
	})
}

// failed counts a failure, and calls etcd unreachable once it has not answered for
// outageAfter: once, with what the connection to etcd meets (store.Why), which the failed
// request itself, ended by its time limit, does not say. Run's goroutine calls it.
func (w *Watcher) failed(ctx context.Context, op string, err error) {
	w.Observer.Failed(op, err)
	w.reach.mu.Lock()
	due := !w.reach.down && time.Since(w.reach.since) >= outageAfter
	w.reach.mu.Unlock()
	if !due {
		return
	}
	if why := store.Why(ctx, w.Client); why != nil {
		err = fmt.Errorf("%w; the connection: %v", err, why)
	}
	w.reach.mu.Lock()
	defer w.reach.mu.Unlock()
	if time.Since(w.reach.since) < outageAfter { // it answered meanwhile
		return
	}
	w.reach.down = true
	since := w.reach.since.UTC().Format(time.RFC3339)
	w.reach.state.Set(reachDown, func(reachState) {
		if w.generation == 0 {
			// Never loaded: every query answers SERVFAIL ("records not loaded from etcd yet",
			// which the errors plugin logs for each); this line says why.
			w.Log.Errorf("etcd unreachable for %s since the start (%s): its zones answer SERVFAIL until their records load: %s: %v", w.Prefix, since, op, err)
		} else {
			w.Log.Warningf("etcd unreachable for %s since %s, serving the last records: %s: %v", w.Prefix, since, op, err)
		}
		w.Observer.Reachable(false)
	})
}
