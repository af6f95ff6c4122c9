package kubesource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
)

// TestAPIHealthLogsOncePerChange pins that a persistent failure of the API server, or of one
// informer's list/watch, is logged when it starts (or changes) and when it ends, not on every
// retry.
func TestAPIHealthLogsOncePerChange(t *testing.T) {
	refused := errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "httproutes"}, "", errors.New("RBAC"))
	forbiddenGW := apierrors.NewForbidden(schema.GroupResource{Resource: "gateways"}, "", errors.New("RBAC"))
	type step struct {
		request error  // a request's outcome: nil answered
		watch   error  // or an informer's watch error
		kind    string // of the informer
	}
	for _, tc := range []struct {
		name  string
		steps []step
		want  []string // line prefixes, in order
	}{
		{name: "an outage is logged when it starts and when it ends",
			steps: []step{{request: refused}, {request: refused}, {request: refused}, {}, {}, {request: refused}},
			want:  []string{"W Kubernetes API unreachable", "I Kubernetes API answers again", "W Kubernetes API unreachable"}},
		{name: "a cancelled request (Stop) is no outage",
			steps: []step{{request: fmt.Errorf("get: %w", context.Canceled)}, {}},
			want:  nil},
		{name: "a request that times out is an outage",
			steps: []step{{request: fmt.Errorf("get: %w", context.DeadlineExceeded)}},
			want:  []string{"W Kubernetes API unreachable"}},
		{name: "a watch error is logged once per kind while it stays the same",
			steps: []step{{watch: forbidden, kind: "HTTPRoute"}, {watch: forbidden, kind: "HTTPRoute"},
				{watch: forbiddenGW, kind: "Gateway"}, {watch: forbiddenGW, kind: "Gateway"}, {}, {watch: forbidden, kind: "HTTPRoute"}},
			want: []string{"W Listing or watching HTTPRoute", "W Listing or watching Gateway"}},
		{name: "a changed watch error is logged again",
			steps: []step{{watch: forbidden, kind: "HTTPRoute"}, {watch: forbiddenGW, kind: "HTTPRoute"}},
			want:  []string{"W Listing or watching HTTPRoute", "W Listing or watching HTTPRoute"}},
		{name: "a watch error after an outage is news again",
			steps: []step{{watch: forbidden, kind: "HTTPRoute"}, {request: refused}, {}, {watch: forbidden, kind: "HTTPRoute"}},
			want: []string{"W Listing or watching HTTPRoute", "W Kubernetes API unreachable", "I Kubernetes API answers again",
				"W Listing or watching HTTPRoute"}},
		{name: "normal watch ends and transport errors in a watch log nothing of their own",
			steps: []step{{watch: io.EOF, kind: "Gateway"}, {watch: io.ErrUnexpectedEOF, kind: "Gateway"},
				{watch: apierrors.NewResourceExpired("too old"), kind: "Gateway"}, {watch: refused, kind: "Gateway"}},
			want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newAPIHealth()
			h.observed = true
			var got []string
			h.warn = func(f string, a ...any) { got = append(got, "W "+fmt.Sprintf(f, a...)) }
			h.info = func(f string, a ...any) { got = append(got, "I "+fmt.Sprintf(f, a...)) }
			for _, s := range tc.steps {
				if s.kind != "" {
					h.watchError(s.kind)(context.Background(), nil, s.watch)
					continue
				}
				rt := h.observe(roundTripFunc(func(*http.Request) (*http.Response, error) {
					if s.request != nil {
						return nil, s.request
					}
					return &http.Response{StatusCode: http.StatusOK}, nil
				}))
				req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:6443/api", nil)
				_, _ = rt.RoundTrip(req)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("logged %d lines, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("line %d = %q, want it to start with %q", i, got[i], w)
				}
			}
		})
	}
}

// TestDiscoveryFailureLoggedOncePerChange pins that a discovery that keeps failing (the loop
// retries every 0.5 s to DiscoveryInterval) is logged when it starts failing and when it works
// again, and that a discovery cut short by Stop logs nothing.
func TestDiscoveryFailureLoggedOncePerChange(t *testing.T) {
	w := NewForClients(kubefake.NewClientset(), gwfake.NewSimpleClientset(), Options{})
	var got []string
	w.health.warn = func(f string, a ...any) { got = append(got, "W "+fmt.Sprintf(f, a...)) }
	w.health.info = func(f string, a ...any) { got = append(got, "I "+fmt.Sprintf(f, a...)) }
	var fail error
	w.resources = func(_ context.Context, gv string) (*metav1.APIResourceList, error) {
		if fail != nil {
			return nil, fail
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{}, gv) // nothing served: no informer started
	}
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, s := range []struct {
		ctx  context.Context
		fail error
	}{
		{ctx, errors.New("connection refused")}, {ctx, errors.New("connection refused")}, {ctx, errors.New("timeout")},
		{ctx, nil}, {ctx, nil}, {cancelled, errors.New("context canceled")}, {ctx, errors.New("connection refused")},
	} {
		fail = s.fail
		w.discover(s.ctx)
	}
	want := []string{"W Gateway API discovery failed", "I Gateway API discovery works again", "W Gateway API discovery failed"}
	if len(got) != len(want) {
		t.Fatalf("logged %d lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, p := range want {
		if !strings.HasPrefix(got[i], p) {
			t.Errorf("line %d = %q, want it to start with %q", i, got[i], p)
		}
	}
}
