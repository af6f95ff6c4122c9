package kubesource

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/client-go/util/watchlist"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// apiserverMetric sums the samples of a kube-apiserver metric whose labels hold every one of
// want (name="value").
func (c *cluster) apiserverMetric(name string, want ...string) float64 {
	c.t.Helper()
	raw, err := c.kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	c.must(err)
	sum := 0.0
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		labels, value, ok := strings.Cut(line[len(name)+1:], "} ")
		if !ok {
			continue
		}
		match := true
		for _, w := range want {
			match = match && strings.Contains(","+labels+",", ","+w+",")
		}
		if match {
			var v float64
			if _, err := fmt.Sscan(value, &v); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// TestIntegrationCustomResourceInformersList pins that the informers of the Gateway API kinds
// read their initial state with a LIST, not as a stream of watch events (WatchListClient): at
// 100k routes streaming took twice the CPU (see listing.go).
func TestIntegrationCustomResourceInformersList(t *testing.T) {
	c := startCluster(t)
	c.namespace("apps", nil)
	c.httpRoute("apps", "web", []string{"web.example.com"}, nil, parentRef("apps", "gw", ""))
	lists := func() float64 {
		return c.apiserverMetric("apiserver_request_total", `resource="httproutes"`, `verb="LIST"`)
	}
	streams := func() float64 {
		return c.apiserverMetric("apiserver_watch_list_duration_seconds_count", `resource="httproutes"`)
	}
	listsBefore, streamsBefore := lists(), streams()

	w := c.watch(source.Config{DomainFilter: source.NewDomainFilter([]string{"example.com"}, nil)}, newRecordingObserver())
	waitSynced(t, w)
	if n := lists() - listsBefore; n < 1 {
		t.Errorf("the watcher synced with %v LISTs of httproutes, want at least 1", n)
	}
	if n := streams() - streamsBefore; n != 0 {
		t.Errorf("the watcher streamed httproutes %v times (WatchListClient), want 0", n)
	}
	if !watchlist.DoesClientNotSupportWatchListSemantics(w.gw) || !watchlist.DoesClientNotSupportWatchListSemantics(w.dyn) {
		t.Errorf("the Gateway API and dynamic clients of New support watch-list semantics: their informers stream")
	}
}
