package kubesource

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// notFoundFront answers 404 to every discovery request for group's versions while on is set,
// as an aggregating front or an API server still starting does, and passes everything else on.
type notFoundFront struct {
	next  http.RoundTripper
	group string
	on    *atomic.Bool
	hits  *atomic.Int64
}

func (f notFoundFront) RoundTrip(req *http.Request) (*http.Response, error) {
	rest, ok := strings.CutPrefix(req.URL.Path, "/apis/"+f.group+"/")
	if ok && req.Method == http.MethodGet && !strings.Contains(rest, "/") && f.on.Load() {
		f.hits.Add(1)
		return &http.Response{
			StatusCode: http.StatusNotFound, Request: req,
			Header: http.Header{"Content-Type": []string{"application/json"}},
			Body:   io.NopCloser(strings.NewReader(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)),
		}, nil
	}
	return f.next.RoundTrip(req)
}

// TestIntegrationA404ForAServedGroupIsNotAbsence: while discovery answers 404 for the Gateway
// API group whose CRDs exist, the watcher does not call its kinds absent and does not sync (a
// writer deletes nothing); when discovery answers, they are served and the names publish. A
// kind whose CRD really is not installed is still reported absent at once, confirmed by the
// CRD read back.
func TestIntegrationA404ForAServedGroupIsNotAbsence(t *testing.T) {
	c := startCluster(t, testenv.WithoutCRDs("GRPCRoute"))
	c.namespace("apps", nil)
	c.gatewayClass()
	c.gateway(newGateway("apps", "gw",
		listener("http", gatewayv1.HTTPProtocolType, 80, "*.example.com", gatewayv1.NamespacesFromSame, nil),
	), "192.0.2.1")
	c.httpRoute("apps", "web", []string{"web.example.com"}, nil, parentRef("apps", "gw", ""))

	var on atomic.Bool
	var hits atomic.Int64
	on.Store(true)
	rc := rest.CopyConfig(c.env.Config)
	rc.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return notFoundFront{next: next, group: gatewayv1.GroupName, on: &on, hits: &hits}
	})
	obs := newRecordingObserver()
	w := c.watchAs(rc, source.Config{}, obs)

	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if w.Synced() {
			t.Fatal("the watcher synced while discovery answered 404 for a group whose CRDs exist")
		}
		for _, kind := range []string{source.KindHTTPRoute, source.KindGateway} {
			if h := obs.servedHistory(kind); len(h) > 0 {
				t.Fatalf("%s reported served=%v while discovery answered 404 for its group", kind, h)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if hits.Load() == 0 {
		t.Fatal("no discovery request met the 404 front")
	}
	on.Store(false)
	waitSynced(t, w)
	eventually(t, waitFor, "web published once discovery answers", endpointIs(w, "web.example.com", "192.0.2.1"))
	if h := obs.servedHistory(source.KindHTTPRoute); len(h) != 1 || !h[0] {
		t.Errorf("HTTPRoute served history %v, want [true]: never reported absent", h)
	}
	if h := obs.servedHistory(source.KindGRPCRoute); len(h) != 1 || h[0] {
		t.Errorf("GRPCRoute served history %v, want [false]: its CRD is not installed", h)
	}
	t.Logf("%d discovery requests answered 404; synced once discovery answered", hits.Load())
}
