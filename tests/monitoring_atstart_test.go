package tests

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/declared"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/kubesource"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// gatewaydnsMetrics reads the metrics the plugin declares from its source, by role: those
// labelled by zones are the serve role's, those labelled by owner the publish role's. The
// names of histograms are those of their _count series.
func gatewaydnsMetrics(t *testing.T) (serve, publish []string) {
	t.Helper()
	var ms []declared.Metric
	// The plugin's root declares the serve role's metrics, package publish the publish role's.
	for _, dir := range []string{filepath.Join("..", "plugin", "gatewaydns"), filepath.Join("..", "plugin", "gatewaydns", "publish")} {
		declaredHere, err := declared.Metrics(dir, map[string]string{"plugin.Namespace": plugin.Namespace, "pluginName": "gatewaydns"})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, declaredHere...)
	}
	for _, m := range ms {
		name := m.Name
		if m.Type == "Histogram" {
			name += "_count"
		}
		switch {
		case !strings.HasPrefix(m.Name, "coredns_gatewaydns_"):
			t.Errorf("%s: not a coredns_gatewaydns_ metric", m.Name)
		case !slices.Contains(m.Labels, "server"):
			t.Errorf("%s: no server label", m.Name)
		case slices.Contains(m.Labels, "zones"):
			serve = append(serve, name)
		case slices.Contains(m.Labels, "owner"):
			publish = append(publish, name)
		default:
			t.Errorf("%s %v: neither the serve role's (zones) nor the publish role's (owner): this test does not know when it should exist", m.Name, m.Labels)
		}
	}
	if len(serve) == 0 || len(publish) == 0 {
		t.Fatalf("read %d serve and %d publish metrics from the plugin's source: its shape changed?", len(serve), len(publish))
	}
	return serve, publish
}

// firstScrape reads /metrics as soon as the process answers it: the first scrape a
// Prometheus could make.
func firstScrape(t *testing.T, p *corednsproc.Process) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if !p.Running() {
			t.Fatalf("coredns exited: %v", p.Child.Err())
		}
		if body, code := e2e.HTTPGet("http://" + p.Metrics + "/metrics"); code == http.StatusOK {
			return body
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("/metrics did not answer within 30s")
	return ""
}

// TestEveryMetricIsExportedAtTheFirstScrape starts the built binary in each role and checks
// that its first scrape holds every metric the plugin declares for the role, and every label
// value a counter of the publish role can take: an alert on increase() sees the first event
// only of a series that existed before it. The list comes from the plugin's source, so a new
// metric not created at zero fails here.
func TestEveryMetricIsExportedAtTheFirstScrape(t *testing.T) {
	serve, publish := gatewaydnsMetrics(t)
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	serveOnly := fmt.Sprintf("openmcp.cluster {\n    prometheus :9153\n    gatewaydns {\n        endpoint %s\n    }\n}\n", etcd.ClientURL)
	for _, tc := range []struct {
		name        string
		corefile    string
		want, other []string
	}{
		{"serve only", serveOnly, serve, publish},
		{"publish only", e2e.WriterCorefile(etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster"), publish, serve},
		{"serve and publish", e2e.BothRoles(etcd.ClientURL, "eu1", kube.KubeconfigFile), slices.Concat(serve, publish), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := corednsproc.Start(t, "atstart.Corefile", tc.corefile)
			body := firstScrape(t, p)
			exported := map[string][]map[string]string{}
			for _, s := range e2e.Samples(t, body) {
				exported[s.Name] = append(exported[s.Name], s.Labels)
			}
			for _, m := range tc.want {
				if len(exported[m]) == 0 {
					t.Errorf("%s is not exported at the first scrape", m)
				}
			}
			for _, m := range tc.other {
				if len(exported[m]) != 0 {
					t.Errorf("%s is exported, but the stanza does not have its role", m)
				}
			}
			if slices.Equal(tc.want, serve) {
				return
			}
			// The publish role's counters, for every label value they can take. The stanza
			// names no sources: it reads the default kinds.
			kinds := kubesource.Options{}
			for _, kind := range kinds.SourceKinds() {
				for _, cause := range source.Causes {
					checkHasSeries(t, exported, "coredns_gatewaydns_source_rejections_total", map[string]string{"kind": kind, "cause": string(cause)})
				}
			}
			for _, kind := range kinds.DiscoveredKinds() {
				checkHasSeries(t, exported, "coredns_gatewaydns_source_kind_served", map[string]string{"kind": kind})
			}
			for _, reason := range plan.Reasons {
				checkHasSeries(t, exported, "coredns_gatewaydns_writer_skipped_total", map[string]string{"reason": string(reason)})
			}
		})
	}
}

// checkHasSeries fails unless exported holds a series of name with the labels want (and others).
func checkHasSeries(t *testing.T, exported map[string][]map[string]string, name string, want map[string]string) {
	t.Helper()
	for _, labels := range exported[name] {
		held := 0
		for k, v := range want {
			if labels[k] == v {
				held++
			}
		}
		if held == len(want) {
			return
		}
	}
	t.Errorf("%s%v is not exported at the first scrape", name, want)
}
