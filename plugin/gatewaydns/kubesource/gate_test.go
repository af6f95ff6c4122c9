package kubesource

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/backoff"
)

// longWait stands for a back-off that a test must never see waited out.
const longWait = time.Minute

// prompt is how soon a gate that need not wait lets a request through.
const prompt = 500 * time.Millisecond

// answering lists with the error err.
func answering(err *error) cache.ListerWatcher {
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &metav1.List{}, *err
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewEmptyWatch(), *err
		},
	}
}

// TestAGateWaitsAfterAFailureUntilTheAPIServerIsReady pins when a gate lets the next request
// through after the last one ended with err: at once after a success or an answer that asks
// for a list from another resourceVersion; after a failure, not before the back-off or the
// prober's kick (then at once); and while the prober knows the API server not to be ready,
// not on the back-off at all.
func TestAGateWaitsAfterAFailureUntilTheAPIServerIsReady(t *testing.T) {
	gone := apierrors.NewResourceExpired("too old resource version: 1 (250)")
	refused := errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	for _, tc := range []struct {
		name      string
		err       error
		notReady  bool // the prober has found the API server not ready
		kick      bool // the prober finds it ready while the gate waits
		wantWaits bool
	}{
		{name: "after a success, at once", err: nil},
		{name: "after a resourceVersion too old, at once: the re-list is due", err: gone},
		{name: "after a failure, not before the back-off", err: refused, wantWaits: true},
		{name: "after a failure, at the kick of readiness", err: refused, kick: true},
		{name: "while not ready, not on the back-off", err: refused, notReady: true, wantWaits: true},
		{name: "while not ready, at the kick", err: refused, notReady: true, kick: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newAPIHealth()
			err := tc.err
			g := newGate(h, answering(&err), func(error) {})
			g.delay = backoff.New(longWait, longWait)
			if tc.notReady {
				h.setProbing()
				g.delay = backoff.New(time.Millisecond, time.Millisecond) // the back-off alone would pass at once
				g.notReady = backoff.New(longWait, longWait)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, _ = g.ListWithContext(ctx, metav1.ListOptions{})

			passed := make(chan time.Time, 1)
			go func() {
				err = nil
				_, _ = g.ListWithContext(ctx, metav1.ListOptions{})
				passed <- time.Now()
			}()
			if tc.kick {
				h.kick() // before or during the wait: either opens the gate, being after the failure
			}
			start := time.Now()
			select {
			case at := <-passed:
				if tc.wantWaits {
					t.Fatalf("let through after %v, want a wait", at.Sub(start))
				}
			case <-time.After(prompt):
				if !tc.wantWaits {
					t.Fatalf("not let through within %v", prompt)
				}
				cancel() // a wait ends with the context
				<-passed
			}
		})
	}
}

// TestAServerThatCannotServeStartsTheProber: a 503 or a 429 (an API server restarting behind a
// proxy that answers for it) starts the prober, as a connection refused does (apiHealth.failed);
// an answer about the request (a 404 of a kind whose CRD is gone) does not.
func TestAServerThatCannotServeStartsTheProber(t *testing.T) {
	gr := schema.GroupResource{Group: "gateway.networking.k8s.io", Resource: "httproutes"}
	for _, tc := range []struct {
		err    error
		probes bool
	}{
		{apierrors.NewServiceUnavailable("the server is shutting down"), true},
		{apierrors.NewTooManyRequests("storage is (re)initializing", 1), true},
		{apierrors.NewGenericServerResponse(http.StatusGatewayTimeout, "list", gr, "", "timeout", 0, true), true},
		{apierrors.NewNotFound(gr, ""), false},
		{apierrors.NewForbidden(gr, "", errors.New("RBAC")), false},
	} {
		h := newAPIHealth()
		err := tc.err
		g := newGate(h, answering(&err), func(error) {})
		_, _ = g.ListWithContext(context.Background(), metav1.ListOptions{})
		select {
		case <-h.down:
			if !tc.probes {
				t.Errorf("%v started the prober", tc.err)
			}
		default:
			if tc.probes {
				t.Errorf("%v did not start the prober", tc.err)
			}
		}
	}
}
