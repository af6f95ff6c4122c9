package mirror

import (
	"sync"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/statelog"
)

// reach follows whether etcd answers, to tell the observer and the log of transitions only:
// one line when it stops answering, one when it is back, however many retries lie between.
type reach struct {
	// mu makes reading since and changing the state one step: a failure that finds the last
	// answer old enough must not call etcd unreachable after an answer that came meanwhile.
	mu    sync.Mutex
	state statelog.State[reachState]
	since time.Time // last answer, or the start
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
	w.reach.state.Set(reachUp, func(prev reachState) {
		if prev == reachDown {
			w.Log.Infof("etcd answers again for %s, after %s", w.Prefix, down.Round(time.Second))
		}
		w.Observer.Reachable(true)
	})
}

// failed counts a failure, and calls etcd unreachable once it has not answered for
// outageAfter.
func (w *Watcher) failed(op string, err error) {
	w.Observer.Failed(op, err)
	w.reach.mu.Lock()
	defer w.reach.mu.Unlock()
	if time.Since(w.reach.since) < outageAfter {
		return
	}
	w.reach.state.Set(reachDown, func(reachState) {
		w.Log.Warningf("etcd unreachable for %s since %s, serving the last records: %s: %v", w.Prefix, w.reach.since.UTC().Format(time.RFC3339), op, err)
		w.Observer.Reachable(false)
	})
}
