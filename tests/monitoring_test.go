package tests

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/dashboard"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/promtext"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

var monitoringDir = filepath.Join("..", "deploy", "monitoring")

// promtoolBinary finds promtool, which `make test-binaries` builds (hack/build-promtool.sh):
// see testenv.ToolBinary. A plain `go test` may use one on PATH; a run with
// $GATEWAYDNS_TEST_BIN (make test) fails without the one built there.
func promtoolBinary(t *testing.T) string {
	t.Helper()
	if os.Getenv(testenv.EnvTestBin) == "" {
		if p, err := exec.LookPath("promtool"); err == nil {
			return p
		}
	}
	return testenv.ToolBinary(t, "promtool", "hack/build-promtool.sh")
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

var corednsMetric = regexp.MustCompile(`\bcoredns_[a-z_]+`)

// forwarderMetric: the forward plugin's series, which the central server (no forward) never
// exports; the workload forwarder of tests/alerting's CentralServerKilled scenario records them.
var forwarderMetric = regexp.MustCompile(`^coredns_(proxy|forward)_`)

// monitoredMetrics returns every CoreDNS metric the alert rules and the dashboard's panels
// query (gatewaydns's and CoreDNS's own), and which of them each file uses; the queries
// themselves are in queries.
func monitoredMetrics(t *testing.T) (used map[string][]string, queries map[string]string) {
	t.Helper()
	used, queries = map[string][]string{}, map[string]string{}
	add := func(file, expr string) {
		queries[file] = expr
		for _, m := range corednsMetric.FindAllString(expr, -1) {
			if !forwarderMetric.MatchString(m) && !slices.Contains(used[m], file) {
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
	dash, err := dashboard.Read(filepath.Join(monitoringDir, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range dash.Templating.List {
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			add("dashboard.json variable "+v.Name, m[1])
		}
	}
	panels := 0
	for _, p := range dash.Panels {
		for i, tg := range p.Targets {
			add(fmt.Sprintf("dashboard.json %s (%d)", p.Title, i), tg.Expr)
			panels++
		}
	}
	if len(rules.Groups) == 0 || panels == 0 {
		t.Fatalf("read %d rule groups and %d panel queries: the files' shape changed?", len(rules.Groups), panels)
	}
	return used, queries
}

// labelValues is a Grafana variable's label_values(selector, label): the selector is PromQL.
var labelValues = regexp.MustCompile(`^label_values\((.*), *[a-z_]+\)$`)

// TestMonitoringQueriesParse has promtool parse every query of the dashboard and the rules (as
// recording rules, the dashboard's variables given a value): a panel whose query does not
// parse is an empty panel nobody notices.
func TestMonitoringQueriesParse(t *testing.T) {
	_, queries := monitoredMetrics(t)
	var rules []map[string]string
	for i, where := range slices.Sorted(maps.Keys(queries)) {
		expr := strings.NewReplacer("$server", ".*", "${server}", ".*").Replace(queries[where])
		rules = append(rules, map[string]string{"record": fmt.Sprintf("query_%d", i), "expr": expr})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "queries", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "queries.yaml")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtoolBinary(t), "check", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
	t.Logf("%d queries parse", len(rules))
}

// TestMonitoringMetricsExported scrapes the built binary running a stanza that serves and
// publishes and checks that it exports every metric the alert rules and the dashboard use: a
// renamed metric would leave an alert that never fires and a panel that stays empty. Every
// gatewaydns series carries the server label of the server block's queries
// (coredns_dns_requests_total's), so that the two join on it.
func TestMonitoringMetricsExported(t *testing.T) {
	used, _ := monitoredMetrics(t)
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "", "203.0.113.10")
	k8s.HTTPRoute("infra", "web", "infra", "public", "web.eu1.openmcp.cluster")

	p := corednsproc.Start(t, "monitoring.Corefile", e2e.BothRoles(etcd.ClientURL, "mon", kube.KubeconfigFile))
	p.WaitReady(t, 60*time.Second)

	// Every series exists at zero from the start (TestEveryMetricIsExportedAtTheFirstScrape):
	// nothing needs to happen first.
	body, _ := e2e.HTTPGet("http://" + p.Metrics + "/metrics")
	missing := func(body string, which func(string) bool) (n int) {
		for _, m := range slices.Sorted(maps.Keys(used)) {
			if which(m) && !strings.Contains(body, "\n"+m+"{") && !strings.Contains(body, "\n"+m+" ") {
				t.Errorf("%s is not exported by the binary; used by %s", m, strings.Join(used[m], ", "))
				n++
			}
		}
		return n
	}
	gatewaydns := func(m string) bool { return strings.HasPrefix(m, "coredns_gatewaydns_") }
	n := missing(body, gatewaydns)
	t.Logf("%d metrics used by the rules and the dashboard, %d gatewaydns ones missing at the first scrape", len(used), n)

	e2e.Ask(t, "udp", p.DNS, "web.eu1.openmcp.cluster.", dns.TypeA)
	// CoreDNS counts a request after it has written the answer: the count may follow it.
	p.WaitMetric(t, 5*time.Second, `coredns_dns_requests_total{zone="openmcp.cluster."}`, func(v float64) bool { return v >= 1 })
	body, _ = e2e.HTTPGet("http://" + p.Metrics + "/metrics")
	// CoreDNS's own series exist once a question was answered.
	missing(body, func(m string) bool { return !gatewaydns(m) })
	server := requestsServer(t, body, "openmcp.cluster.")
	labelled := 0
	for _, s := range e2e.Samples(t, body) {
		if !strings.HasPrefix(s.Name, "coredns_gatewaydns_") {
			continue
		}
		labelled++
		if s.Labels["server"] != server {
			t.Errorf("%s%v: server %q, want the queries' %q", s.Name, s.Labels, s.Labels["server"], server)
		}
	}
	t.Logf("%d gatewaydns series, each with server %q", labelled, server)
}

// requestsServer is the server label of the one server block that counted requests for zone
// in body: what metrics.WithServer gives a query there.
func requestsServer(t *testing.T, body, zone string) string {
	t.Helper()
	servers := map[string]bool{}
	for _, s := range promtext.Matching(body, fmt.Sprintf(`coredns_dns_requests_total{zone=%q}`, zone)) {
		servers[s.Labels["server"]] = true
	}
	if len(servers) != 1 {
		t.Fatalf("requests for %s counted by %d servers (%v), want one", zone, len(servers), servers)
	}
	for s := range servers {
		return s
	}
	return ""
}

// TestMonitoringServerBlocksOnTheSameZones: two server blocks serve the same zones on
// different ports from different etcd prefixes, so their numbers differ. Each exports its own
// series, labelled with the server its queries are counted under, and neither overwrites the
// other's, at the start and after a change that only one of them sees.
func TestMonitoringServerBlocksOnTheSameZones(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	// Block a: 3 names. Block b: 5 names and a value it cannot serve.
	for i := range 3 {
		e2e.PutEtcd(t, cli, fmt.Sprintf("/skydns-a/cluster/openmcp/a%d/1", i), fmt.Sprintf(`{"host":"10.40.0.%d"}`, i+1))
	}
	for i := range 5 {
		e2e.PutEtcd(t, cli, fmt.Sprintf("/skydns-b/cluster/openmcp/b%d/1", i), fmt.Sprintf(`{"host":"10.41.0.%d"}`, i+1))
	}
	e2e.PutEtcd(t, cli, "/skydns-b/cluster/openmcp/bad/1", `{"host":`)

	portA, portB := corednsproc.FreePort(t), corednsproc.FreePort(t)
	// Block b is bound to an address: its server label is that address's, as its queries'.
	corefile := fmt.Sprintf(`openmcp.cluster:%d {
    ready
    prometheus :9153
    gatewaydns {
        endpoint %[3]s
        path skydns-a
    }
}
openmcp.cluster:%[2]d {
    bind 127.0.0.1
    prometheus :9153
    gatewaydns {
        endpoint %[3]s
        path skydns-b
    }
}
`, portA, portB, etcd.ClientURL)
	p := corednsproc.Start(t, "two-blocks.Corefile", corefile)
	p.WaitReady(t, 30*time.Second)
	addrA, addrB := fmt.Sprintf("127.0.0.1:%d", portA), fmt.Sprintf("127.0.0.1:%d", portB)
	e2e.WaitFor(t, 10*time.Second, addrA, "a0.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("10.40.0.1"))
	e2e.WaitFor(t, 10*time.Second, addrB, "b0.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("10.41.0.1"))

	// What CoreDNS labels the two blocks' queries with: the address of each block's server.
	serverA, serverB := fmt.Sprintf("dns://:%d", portA), fmt.Sprintf("dns://127.0.0.1:%d", portB)
	// CoreDNS counts a request after it has written the answer: the count may follow it.
	for _, server := range []string{serverA, serverB} {
		p.WaitMetric(t, 5*time.Second, fmt.Sprintf(`coredns_dns_requests_total{server=%q,zone="openmcp.cluster."}`, server), func(v float64) bool { return v >= 1 })
	}
	body, _ := e2e.HTTPGet("http://" + p.Metrics + "/metrics")
	for _, server := range []string{serverA, serverB} {
		e2e.CheckExported(t, body, fmt.Sprintf(`coredns_dns_requests_total{server=%q,zone="openmcp.cluster."}`, server))
	}
	if t.Failed() {
		t.Fatalf("the queries are not counted under the servers this test expects:\n%s", body)
	}

	series := func(name, server string) string {
		return fmt.Sprintf(`%s{server=%q,zones="openmcp.cluster."}`, name, server)
	}
	// check waits until every series holds its value: the answers come from the index at once,
	// the gauges follow when the watcher reports what it applied.
	check := func(what string, want map[string]float64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			body, _ := e2e.HTTPGet("http://" + p.Metrics + "/metrics")
			held := 0
			for s, v := range want {
				if got, ok := promtext.Value(body, s); ok && got == v {
					held++
				}
			}
			if held == len(want) {
				return
			}
			if time.Now().After(deadline) {
				for s, v := range want {
					e2e.CheckSeries(t, body, s, v)
				}
				t.Fatalf("%s:\n%s", what, gatewaydnsLines(body))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	check("at the start", map[string]float64{
		series("coredns_gatewaydns_index_records", serverA):         3,
		series("coredns_gatewaydns_index_records", serverB):         5,
		series("coredns_gatewaydns_invalid_records_total", serverA): 0,
		series("coredns_gatewaydns_invalid_records_total", serverB): 1,
		series("coredns_gatewaydns_etcd_reachable", serverA):        1,
		series("coredns_gatewaydns_etcd_reachable", serverB):        1,
	})

	// A change under block a's prefix: only its series move.
	e2e.PutEtcd(t, cli, "/skydns-a/cluster/openmcp/a3/1", `{"host":"10.40.0.4"}`)
	e2e.WaitFor(t, 10*time.Second, addrA, "a3.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("10.40.0.4"))
	check("after a change only block a sees", map[string]float64{
		series("coredns_gatewaydns_index_records", serverA):                          4,
		series("coredns_gatewaydns_index_records", serverB):                          5,
		`coredns_gatewaydns_watch_events_total{server="` + serverA + `",type="put"}`: 1,
		`coredns_gatewaydns_watch_events_total{server="` + serverB + `",type="put"}`: 0,
	})
}

// gatewaydnsLines are the gatewaydns series of a /metrics body, for a failure's message.
func gatewaydnsLines(body string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "coredns_gatewaydns_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestMonitoringReloadKeepsOrMovesTheServersSeries: a reload that leaves the server block's
// address as it was shares the running feed and publisher, series and all; one that moves the
// block to another port exports its series under the new address and removes the old
// address's, so that a frozen writer_leader or last_update of a server that no longer exists
// raises no alert.
func TestMonitoringReloadKeepsOrMovesTheServersSeries(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	e2e.PutEtcd(t, etcd.Client(t), "/skydns/cluster/openmcp/by/hand/1", `{"host":"198.51.100.7"}`)
	corefile := func(port int, comment string) string {
		return fmt.Sprintf("# %s\nopenmcp.cluster:%d {\n    ready\n    prometheus :9153\n    gatewaydns {\n"+
			"        endpoint %s\n        owner moved\n        kubeconfig %s\n        domain-filter eu1.openmcp.cluster\n    }\n}\n",
			comment, port, etcd.ClientURL, kube.KubeconfigFile)
	}
	before, after := corednsproc.FreePort(t), corednsproc.FreePort(t)
	serverBefore, serverAfter := fmt.Sprintf("dns://:%d", before), fmt.Sprintf("dns://:%d", after)
	p := corednsproc.Start(t, "moved.Corefile", corefile(before, "first"))
	p.WaitReady(t, 30*time.Second)
	leader := func(server string) string {
		return fmt.Sprintf(`coredns_gatewaydns_writer_leader{owner="moved",server=%q}`, server)
	}
	startResyncs := func(server string) string {
		return fmt.Sprintf(`coredns_gatewaydns_resyncs_total{reason="start",server=%q}`, server)
	}
	p.WaitMetric(t, 30*time.Second, leader(serverBefore), e2e.IsOne)
	p.WaitMetric(t, 10*time.Second, startResyncs(serverBefore), e2e.IsOne)

	if _, completed := p.ReloadNow(t, corefile(before, "the same block"), 20*time.Second); !completed {
		t.Fatal("the reload that keeps the block did not complete")
	}
	p.WaitReady(t, 30*time.Second)
	// Still one full load: the new instance took the running feed instead of loading again.
	if v, _ := p.Metric(startResyncs(serverBefore)); v != 1 {
		t.Errorf("after a reload that keeps the block: %s = %v, want 1 (the feed shared)", startResyncs(serverBefore), v)
	}
	if v, _ := p.Metric(leader(serverBefore)); v != 1 {
		t.Errorf("after a reload that keeps the block: %s = %v, want 1 (the publisher shared)", leader(serverBefore), v)
	}

	if _, completed := p.ReloadNow(t, corefile(after, "moved to another port"), 20*time.Second); !completed {
		t.Fatal("the reload that moves the block did not complete")
	}
	e2e.WaitFor(t, 10*time.Second, fmt.Sprintf("127.0.0.1:%d", after), "hand.by.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("198.51.100.7"))
	p.WaitMetric(t, 30*time.Second, leader(serverAfter), e2e.IsOne)
	p.WaitMetric(t, 10*time.Second, startResyncs(serverAfter), e2e.IsOne)
	body, _ := e2e.HTTPGet("http://" + p.Metrics + "/metrics")
	for _, s := range e2e.Samples(t, body) {
		if strings.HasPrefix(s.Name, "coredns_gatewaydns_") && s.Labels["server"] != serverAfter {
			t.Errorf("%s%v is still exported after its server block moved to %s", s.Name, s.Labels, serverAfter)
		}
	}
}
