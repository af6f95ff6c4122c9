// The gate every list and watch request of an informer passes: after a failure it waits out a
// back-off, cut short the moment the prober finds the API server ready again (recovery.go), so
// that an outage is asked less and less often and its end is followed at once.

package kubesource

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/backoff"
)

// The gate's back-off: short at first, so that a refusal that passes (a 429, a 404 before a CRD
// is served) costs little; at most client-go's 30 s, for what the prober cannot see (a kind
// whose CRD is gone, a request the API server refuses while it is ready).
const (
	gateMinDelay = 100 * time.Millisecond
	gateMaxDelay = 30 * time.Second
)

// gate is the ListerWatcher of one informer's Reflector: its inner list and watch, each
// request made only once the back-off after the last failure has passed or been cut short.
type gate struct {
	inner       cache.ListerWatcherWithContext
	noWatchList bool // the inner client does not stream lists (listingGatewayClient)
	health      *apiHealth
	onError     func(error)

	mu    sync.Mutex
	delay *backoff.Backoff
	// notReady is the wait while the prober knows the API server not to be ready: for its
	// kick, at most gateMaxDelay (should the prober be wrong).
	notReady *backoff.Backoff
	failing  bool
	// recovered is apiHealth.recovered as it was at the failure: closed by an answer that
	// came since, which then ends the wait at once.
	recovered <-chan struct{}
}

func newGate(h *apiHealth, src cache.ListerWatcher, onError func(error)) *gate {
	return &gate{
		inner: cache.ToListerWatcherWithContext(src), noWatchList: watchlist.DoesClientNotSupportWatchListSemantics(src),
		health: h, onError: onError,
		delay: backoff.New(gateMinDelay, gateMaxDelay), notReady: backoff.New(gateMaxDelay, gateMaxDelay),
	}
}

// IsWatchListSemanticsUnSupported is what client-go asks of the Reflector's ListerWatcher: the
// gate streams lists where its inner client does.
func (g *gate) IsWatchListSemanticsUnSupported() bool { return g.noWatchList }

// List and Watch make the gate a cache.ListerWatcher; the Reflector calls the WithContext ones.
func (g *gate) List(opts metav1.ListOptions) (runtime.Object, error) {
	return g.ListWithContext(context.Background(), opts)
}

func (g *gate) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return g.WatchWithContext(context.Background(), opts)
}

// ListWithContext lists past the gate.
func (g *gate) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if err := g.pass(ctx); err != nil {
		return nil, err
	}
	recovered := g.health.recovered()
	obj, err := g.inner.ListWithContext(ctx, opts)
	g.done(ctx, err, recovered)
	return obj, err
}

// WatchWithContext starts a watch past the gate.
func (g *gate) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if err := g.pass(ctx); err != nil {
		return nil, err
	}
	recovered := g.health.recovered()
	w, err := g.inner.WatchWithContext(ctx, opts)
	g.done(ctx, err, recovered)
	return w, err
}

// pass waits, when the last request failed, for the back-off or for the API server to be ready
// again (recovery.recovered), whichever comes first; a wait cut short starts the back-off over,
// since what failed is known to work again. While the prober knows the API server not to be
// ready, only its word opens the gate: a request sent to a kube-apiserver that takes
// connections but does not serve yet would hang for seconds.
func (g *gate) pass(ctx context.Context) error {
	// Held through the wait: a Reflector makes one request at a time, so nothing else waits
	// on it but a request abandoned at Stop, which ends with ctx too.
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.failing {
		return nil
	}
	delay := g.delay
	if g.health.notReady() {
		delay = g.notReady
	}
	if !delay.Wait(ctx, g.recovered) {
		if err := ctx.Err(); err != nil {
			return err
		}
		g.delay.Reset()
	}
	return nil
}

// done notes how a request ended. A resourceVersion too old (after a restart of the API server,
// whose watch cache starts anew) or too new (an API server behind the others) is an answer, not
// a failure: the Reflector lists again, at once.
func (g *gate) done(ctx context.Context, err error, recovered <-chan struct{}) {
	switch {
	case err == nil || relistError(err):
		g.mu.Lock()
		g.failing = false
		g.delay.Reset()
		g.mu.Unlock()
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
	default:
		g.onError(err)
		g.fail(recovered)
		if serverFailing(err) {
			g.health.wentDown() // an API server behind a proxy that answers for it while it restarts
		}
	}
}

// serverFailing reports whether err is the API server's answer that it cannot serve now.
func serverFailing(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := status.Status().Code
	return code == http.StatusTooManyRequests || code >= http.StatusInternalServerError
}

// fail makes the next request wait out the back-off, or for an answer of the API server after
// recovered (apiHealth.recovered taken before the failing request was made, so that an answer
// that came during it is not missed).
func (g *gate) fail(recovered <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failing, g.recovered = true, recovered
}

// relistError reports whether err asks for a list from another resourceVersion: one too old
// (compacted, or older than a restarted API server's watch cache) or too new (an API server
// behind the others; client-go's isTooLargeResourceVersionError, unexported there).
func relistError(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) ||
		apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}
