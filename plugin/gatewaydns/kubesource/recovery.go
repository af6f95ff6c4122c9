// Following the end of an API server outage within a second: while it does not answer, or
// answers that it is not ready, one prober asks its /readyz every probeInterval (instead of
// every informer retrying on a growing back-off), and the informers' gates are opened the moment
// it says ready. Not before: a kube-apiserver that is starting takes connections before it
// serves, and held the lists sent then for 6 s before failing them (its handler timeout), while
// its /readyz answered at once.

package kubesource

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

const (
	// probeInterval is how often the prober asks an API server that does not answer, or is not
	// ready: what following its recovery may cost.
	probeInterval = 250 * time.Millisecond
	// probeTimeout bounds one probe: a black-holed API server is asked again, not waited on.
	probeTimeout = time.Second
)

// recovery tells the gates when the API server is ready again.
type recovery struct {
	mu       sync.Mutex
	answered chan struct{} // closed by the next kick, then replaced
	probing  bool          // the prober found the API server not ready, and asks until it is
	down     chan struct{} // (1) a request found it unreachable, or failing: the prober starts
}

func newRecovery() *recovery {
	return &recovery{answered: make(chan struct{}), down: make(chan struct{}, 1)}
}

// recovered is closed at the next kick: the API server became ready.
func (r *recovery) recovered() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.answered
}

// notReady reports whether the prober knows the API server not to be ready: a gate then waits
// for its kick rather than on its own back-off.
func (r *recovery) notReady() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.probing
}

func (r *recovery) setProbing() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probing = true
}

// kick opens every gate waiting on recovered.
func (r *recovery) kick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probing = false
	close(r.answered)
	r.answered = make(chan struct{})
}

// wentDown starts the prober, unless it is told already.
func (r *recovery) wentDown() {
	select {
	case r.down <- struct{}{}:
	default:
	}
}

// probeLoop runs the prober until ctx ends: each time a request finds the API server
// unreachable or failing, it asks whether it is ready, and, when it is not, until it is.
func (w *Watcher) probeLoop(ctx context.Context, rc rest.Interface) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.health.down:
		}
		w.probeUntilReady(ctx, rc)
	}
}

// probeUntilReady asks the API server's /readyz every probeInterval until it says ready, and
// opens the gates then: only when it was not ready at first. An API server that is ready was
// not what failed (a kind whose CRD is gone, a webhook): the gates keep their back-off.
func (w *Watcher) probeUntilReady(ctx context.Context, rc rest.Interface) {
	t := time.NewTicker(probeInterval)
	defer t.Stop()
	for first := true; ; first = false {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := rc.Get().AbsPath("/readyz").Do(pctx).Error()
		cancel()
		if ctx.Err() != nil {
			return
		}
		if ready(err) {
			if !first {
				w.health.kick()
			}
			return
		}
		if first {
			w.health.setProbing()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ready reports whether a /readyz request's outcome says the API server serves: it said so, or
// it answered that this client may not ask (it serves, only not this path to this client).
func ready(err error) bool {
	if err == nil {
		return true
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	switch status.Status().Code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return true
	}
	return false
}
