package alerting

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// rulesFile is the shipped rule file the scenarios run.
var rulesFile = filepath.Join("..", "..", "deploy", "monitoring", "alerts.yaml")

// evaluationInterval is how often the rules are evaluated and scrapeInterval how often the
// targets are scraped, as a Prometheus of kube-prometheus's defaults does (its ServiceMonitor
// for CoreDNS scrapes every 15 s): the alerts' timings are judged with them, not at the
// recording's step of a second.
const (
	evaluationInterval = 30 * time.Second
	scrapeInterval     = 15 * time.Second
)

// state is what an alert must be at a moment of a scenario.
type state int

const (
	absent    state = iota // neither pending nor firing
	firing                 // firing
	notFiring              // pending or absent: its condition may hold, not for long enough
	anyState               // a transition: anything
)

// window is a span of a scenario's recording in which an alert is in a state; outside every
// window it is absent.
type window struct {
	alert    string
	state    state
	from, to time.Duration
}

// expectation is every window of a scenario.
type expectation []window

func (e expectation) stateAt(alert string, t time.Duration) state {
	for _, w := range e {
		if w.alert == alert && t >= w.from && t <= w.to {
			return w.state
		}
	}
	return absent
}

// alertNames are the alerts a rule file defines.
func alertNames(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			// An alert may have a rule per severity.
			if r.Alert != "" && !slices.Contains(names, r.Alert) {
				names = append(names, r.Alert)
			}
		}
	}
	return names
}

// promtoolTests turns a recording and what should have fired into promtool's unit test format:
// at every evaluation from the first full minute on, each alert whose state is known is
// checked to be exactly that, and each that may only be pending is checked not to fire.
func promtoolTests(t *testing.T, name string, rec *recording, want expectation) map[string]any {
	t.Helper()
	alerts := alertNames(t, rulesFile)
	for _, w := range want {
		if !slices.Contains(alerts, w.alert) {
			t.Fatalf("scenario %s expects %s, which %s does not define", name, w.alert, rulesFile)
		}
	}
	rec.mu.Lock()
	n := rec.n
	var input []map[string]string
	keys := make([]string, 0, len(rec.series))
	for k := range rec.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	every := int(scrapeInterval / rec.step)
	for _, k := range keys {
		input = append(input, map[string]string{"series": k, "values": values(downsample(rec.series[k], n, every), (n+every-1)/every)})
	}
	rec.mu.Unlock()

	var checks []map[string]any
	end := time.Duration(n-1) * rec.step
	for at := evaluationInterval * 2; at <= end; at += evaluationInterval {
		var exact, mayPend []string
		var fire []map[string]string
		for _, a := range alerts {
			switch want.stateAt(a, at) {
			case absent:
				exact = append(exact, a)
			case firing:
				exact = append(exact, a)
				fire = append(fire, map[string]string{"labels": fmt.Sprintf(`{alertname=%q, alertstate="firing"}`, a)})
			case notFiring:
				mayPend = append(mayPend, a)
			}
		}
		if len(exact) > 0 {
			checks = append(checks, map[string]any{
				"expr":        fmt.Sprintf(`group by (alertname, alertstate) (ALERTS{alertname=~"%s"})`, strings.Join(exact, "|")),
				"eval_time":   at.String(),
				"exp_samples": withValue(fire),
			})
		}
		if len(mayPend) > 0 {
			checks = append(checks, map[string]any{
				"expr":        fmt.Sprintf(`group by (alertname) (ALERTS{alertstate="firing", alertname=~"%s"})`, strings.Join(mayPend, "|")),
				"eval_time":   at.String(),
				"exp_samples": []any{},
			})
		}
	}
	return map[string]any{
		"name":             name,
		"interval":         scrapeInterval.String(),
		"input_series":     input,
		"promql_expr_test": checks,
	}
}

func withValue(samples []map[string]string) []map[string]any {
	out := []map[string]any{}
	for _, s := range samples {
		out = append(out, map[string]any{"labels": s["labels"], "value": 1})
	}
	return out
}

// check is a query a scenario asks of its recording, beside its alerts' states: its result at
// a moment of the recording, each sample given as promtool's labels notation.
type check struct {
	expr    string
	at      time.Duration
	samples map[string]float64
}

// withChecks adds checks to a scenario's promtool test.
func withChecks(test map[string]any, checks ...check) map[string]any {
	tests, _ := test["promql_expr_test"].([]map[string]any)
	for _, c := range checks {
		var samples []map[string]any
		for labels, v := range c.samples {
			samples = append(samples, map[string]any{"labels": labels, "value": v})
		}
		if samples == nil {
			samples = []map[string]any{}
		}
		tests = append(tests, map[string]any{"expr": c.expr, "eval_time": c.at.Round(time.Second).String(), "exp_samples": samples})
	}
	test["promql_expr_test"] = tests
	return test
}

// downsample is what a scrape every `every` steps would have stored: each such step's cell, or
// the stale marker if the series went stale since the last one and has no value now.
func downsample(cells []cell, n, every int) []cell {
	var out []cell
	stale := false
	for i := 0; i < n; i++ {
		var c cell
		if i < len(cells) {
			c = cells[i]
		}
		stale = stale || c.stale
		if i%every != 0 {
			continue
		}
		if !c.set && stale {
			c = cell{stale: true}
		}
		out = append(out, c)
		stale = false
	}
	return out
}

// runPromtool runs `promtool test rules` on the shipped rules with the given tests.
func runPromtool(t *testing.T, tests ...map[string]any) {
	t.Helper()
	promtool := testenv.ToolBinary(t, "promtool", "hack/build-promtool.sh")
	abs, err := filepath.Abs(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(map[string]any{
		"rule_files":          []string{abs},
		"evaluation_interval": evaluationInterval.String(),
		"tests":               tests,
	})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "scenario_test.yaml")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// Kept, the recording can be run again under other rules (the rules file is named by its
	// absolute path in it): promtool test rules <file>.
	if os.Getenv("GATEWAYDNS_KEEP_SCENARIOS") != "" {
		keep := filepath.Join(os.TempDir(), "scenario-"+regexp.MustCompile(`\W`).ReplaceAllString(t.Name(), "_")+".yaml")
		_ = os.WriteFile(keep, b, 0o644)
		t.Logf("scenario kept in %s", keep)
	}
	out, err := exec.Command(promtool, "test", "rules", file).CombinedOutput()
	if err != nil {
		// The failures name the eval_time and the alerts: enough to read against the log.
		t.Errorf("promtool test rules: %v\n%s", err, trim(string(out), 8000))
		return
	}
	t.Logf("promtool test rules: %s", strings.TrimSpace(string(out)))
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "\n..."
}
