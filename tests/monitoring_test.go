package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

var monitoringDir = filepath.Join("..", "deploy", "monitoring")

// promtoolBinary finds promtool: $GATEWAYDNS_TEST_BIN/promtool (what `make test-binaries`
// builds), else PATH. Without it the test skips on a workstation and fails in CI, where
// `make test-binaries` must have built it.
func promtoolBinary(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("GATEWAYDNS_TEST_BIN"); dir != "" {
		p := filepath.Join(dir, "promtool")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("promtool not found in $GATEWAYDNS_TEST_BIN or PATH; in CI `make test-binaries` must build it")
	}
	t.Skip("promtool not found in $GATEWAYDNS_TEST_BIN or PATH: run `make test-binaries` (builds bin/promtool) to test the alert rules")
	return ""
}

// TestMonitoringAlertRules checks deploy/monitoring/alerts.yaml with promtool and runs its unit
// tests (alerts_test.yaml): each alert fires on what should raise it, after its `for:`, and not
// on a healthy series.
func TestMonitoringAlertRules(t *testing.T) {
	promtool := promtoolBinary(t)
	for _, args := range [][]string{
		{"check", "rules", "alerts.yaml"},
		{"test", "rules", "alerts_test.yaml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = monitoringDir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		} else {
			t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
		}
	}
}

var gatewaydnsMetric = regexp.MustCompile(`\bcoredns_gatewaydns_[a-z_]+`)

// monitoredMetrics returns every gatewaydns metric the alert rules and the dashboard's panels
// query, and which of them each file uses.
func monitoredMetrics(t *testing.T) map[string][]string {
	t.Helper()
	used := map[string][]string{}
	add := func(file, expr string) {
		for _, m := range gatewaydnsMetric.FindAllString(expr, -1) {
			if !slices.Contains(used[m], file) {
				used[m] = append(used[m], file)
			}
		}
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	b, err := os.ReadFile(filepath.Join(monitoringDir, "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			add("alerts.yaml "+r.Alert, r.Expr)
		}
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if b, err = os.ReadFile(filepath.Join(monitoringDir, "dashboard.json")); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	panels := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			add("dashboard.json "+p.Title, tg.Expr)
			panels++
		}
	}
	if len(rules.Groups) == 0 || panels == 0 {
		t.Fatalf("read %d rule groups and %d panel queries: the files' shape changed?", len(rules.Groups), panels)
	}
	return used
}

// TestMonitoringMetricsExported scrapes the built binary running a stanza that serves and
// publishes and checks that it exports every metric the alert rules and the dashboard use: a
// renamed metric would leave an alert that never fires and a panel that stays empty.
func TestMonitoringMetricsExported(t *testing.T) {
	used := monitoredMetrics(t)
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "", "203.0.113.10")
	k8s.HTTPRoute("infra", "web", "infra", "public", "web.eu1.openmcp.cluster")
	// A name outside the domain filter: the series labelled by what happened (skipped,
	// rejected, by reason and cause) exist only once it happened, so make it happen.
	k8s.HTTPRoute("infra", "outside", "infra", "public", "web.us1.openmcp.cluster")

	p := startCorefile(t, "monitoring.Corefile", bothRoles(etcd.ClientURL, "mon", kube.KubeconfigFile))
	p.waitReady(t, 60*time.Second)

	// Counters and gauges exist at zero from the start; source_* once the kinds are
	// discovered, the propagation histogram once the first change committed: poll.
	var missing []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		body, _ := httpGet("http://" + p.Metrics + "/metrics")
		missing = missing[:0]
		for m := range used {
			if !strings.Contains(body, "\n"+m+"{") && !strings.Contains(body, "\n"+m+" ") {
				missing = append(missing, m)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("%s is not exported by the binary; used by %s", m, strings.Join(used[m], ", "))
	}
	t.Logf("%d metrics used by the rules and the dashboard, %d missing", len(used), len(missing))
}
