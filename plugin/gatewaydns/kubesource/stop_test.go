package kubesource

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/gatewaydns/gatewaydns/internal/tcpproxy"
	dnsrecord "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// stopBound is how long Stop may take, and how long the Watcher's goroutines may take to be
// gone after it, whatever the API server does.
const stopBound = 2 * time.Second

// TestStopIsBoundedWithTheAPIServerBlackHoled puts a proxy that accepts and never answers
// (tcpproxy.BlackHole: a hung host) between the Watcher and a real kube-apiserver, and stops
// the Watcher: before its first sync, with discovery and the first lists waiting on the black
// hole; and after it, with a Warning Event being written into the black hole and a busy work
// queue. Stop returns, and the Watcher's goroutines are gone, within stopBound.
func TestStopIsBoundedWithTheAPIServerBlackHoled(t *testing.T) {
	c := startCluster(t)
	c.namespace("blackhole", nil)
	api, err := url.Parse(c.env.Config.Host)
	c.must(err)
	for _, tc := range []struct {
		name      string
		afterSync bool
	}{
		{name: "before the first sync: discovery and lists in flight", afterSync: false},
		{name: "after the first sync: an Event write in flight, the queue busy", afterSync: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tcpproxy.Start(api.Host)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			rc := rest.CopyConfig(c.env.Config)
			rc.Host = "https://" + p.Addr

			before := goroutines()
			w, err := New(rc, Options{DiscoveryInterval: 500 * time.Millisecond})
			c.must(err)
			var discovering atomic.Int32
			resources := w.resources
			w.resources = func(ctx context.Context, gv string) (*metav1.APIResourceList, error) {
				discovering.Add(1)
				defer discovering.Add(-1)
				return resources(ctx, gv)
			}
			if !tc.afterSync {
				p.BlackHole()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c.must(w.Start(ctx))

			if tc.afterSync {
				waitSynced(t, w)
				p.BlackHole()
				w.Reject(source.Rejection{Object: dnsrecord.ObjectRef{Kind: KindNamespace, Name: "blackhole"},
					Cause: source.CauseInvalidHostname, Reason: "a test Event written into a black hole"})
				eventually(t, waitFor, "an Event write in flight", func() (bool, string) {
					for _, stack := range goroutines() {
						if strings.Contains(stack, "kubesource.eventSink.Create") {
							return true, ""
						}
					}
					return false, "no goroutine in eventSink.Create"
				})
				for i := range 50000 {
					w.queue.Add(dnsrecord.ObjectRef{Kind: source.KindHTTPRoute, Namespace: "busy", Name: strconv.Itoa(i)})
				}
			} else {
				eventually(t, waitFor, "a discovery request in flight", func() (bool, string) {
					return discovering.Load() > 0, "no discovery request in flight"
				})
				if w.Synced() {
					t.Fatal("synced through a black hole")
				}
			}

			start := time.Now()
			w.Stop()
			took := time.Since(start)
			select {
			case <-w.Done():
			default:
				t.Fatal("Done is not closed after Stop")
			}
			if took > stopBound {
				t.Errorf("Stop took %v, want at most %v", took, stopBound)
			}
			checkNoLeaksWithin(t, before, stopBound)
			t.Logf("Stop returned in %v, goroutines gone in %v", took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		})
	}
}
