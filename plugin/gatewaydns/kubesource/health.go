// Reporting the Kubernetes API's condition: the Watcher's requests and informers fail on every
// retry while the API server is down or refuses them, and each of those would otherwise log a
// line (client-go's default watch error handler logs every failed list or watch, per informer,
// every 0.8 s to 30 s). apiHealth logs once per change of the condition instead.

package kubesource

import (
	"context"
	"errors"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/statelog"
)

// apiHealth follows whether the API server answers the Watcher's requests, and the last error
// logged for each informer.
type apiHealth struct {
	// warn and info log; tests replace them to count lines.
	warn, info func(format string, args ...any)
	// observed is true when requests pass through observe (a Watcher made by New), so that a
	// transport error in a watch is known to be logged there already.
	observed bool

	unreachable statelog.State[bool]
	watchErr    statelog.States[string, string] // kind -> last watch error logged

	*recovery // the informers' gates opened when it is ready again (recovery.go)
}

func newAPIHealth() *apiHealth {
	return &apiHealth{warn: log.Warningf, info: log.Infof, recovery: newRecovery()}
}

// observe wraps the transport of a client: a request that gets no answer makes the API server
// unreachable, one that gets any answer (an error status included) makes it reachable.
func (h *apiHealth) observe(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		switch {
		case err == nil:
			h.answered()
		case !errors.Is(err, context.Canceled): // a cancelled request (Stop) says nothing of the server
			h.failed(err)
		}
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (h *apiHealth) failed(err error) {
	h.unreachable.Set(true, func(bool) {
		h.warn("Kubernetes API unreachable, retrying (logged again when it answers): %v", err)
		h.wentDown()
	})
}

func (h *apiHealth) answered() {
	h.unreachable.Set(false, func(bool) {
		h.watchErr.Reset() // a watch error that comes back after the outage is news again
		h.info("Kubernetes API answers again")
	})
}

// watchError is the informers' watch error handler: it logs an informer's list or watch error
// when it differs from the last one logged for that kind, rather than on every retry. Normal
// ends of a watch are not errors, and a transport error is left to the reachability line.
func (h *apiHealth) watchError(kind string) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, _ *cache.Reflector, err error) {
		if ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return
		}
		var status apierrors.APIStatus
		if h.observed && !errors.As(err, &status) {
			return
		}
		h.watchErr.Set(kind, err.Error(), func(string) {
			h.warn("Listing or watching %s failed, retrying (logged again only if the error changes): %v", kind, err)
		})
	}
}
