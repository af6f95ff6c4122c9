package mirror

import (
	"sync"
	"time"
)

// reach follows whether etcd answers, to tell the observer and the log of transitions only:
// one line when it stops answering, one when it is back, however many retries lie between.
type reach struct {
	mu    sync.Mutex
	state int       // reachUnknown, reachUp or reachDown
	since time.Time // last answer, or the start
}

const (
	reachUnknown = iota
	reachUp
	reachDown
)

// answered is called whenever etcd answers anything.
func (w *Watcher) answered() {
	w.reach.mu.Lock()
	prev, down := w.reach.state, time.Since(w.reach.since)
	w.reach.state, w.reach.since = reachUp, time.Now()
	w.reach.mu.Unlock()
	if prev == reachUp {
		return
	}
	if prev == reachDown {
		w.Log.Infof("etcd answers again for %s, after %s", w.Prefix, down.Round(time.Second))
	}
	w.Observer.Reachable(true)
}

// failed counts a failure, and calls etcd unreachable once it has not answered for
// outageAfter.
func (w *Watcher) failed(op string, err error) {
	w.Observer.Failed(op, err)
	w.reach.mu.Lock()
	if w.reach.state == reachDown || time.Since(w.reach.since) < outageAfter {
		w.reach.mu.Unlock()
		return
	}
	w.reach.state = reachDown
	since := w.reach.since
	w.reach.mu.Unlock()
	w.Log.Warningf("etcd unreachable for %s since %s, serving the last records: %s: %v", w.Prefix, since.UTC().Format(time.RFC3339), op, err)
	w.Observer.Reachable(false)
}
