package lifecycle

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// TestReloadsLeaveNoHealthCheckBehind: the health checks (issue 36) run with the stanza's feed,
// which a reload that changes how they run replaces. After reloads that change the checks'
// interval, and reloads that fail (a port held), one checker runs: the process counts one
// target, checks at the last interval's rate, not at one rate per configuration that ever
// started, and its goroutines are back near where they were.
func TestReloadsLeaveNoHealthCheckBehind(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	const host = "127.0.0.31"
	port := corednsproc.FreePort(t)
	e2e.NewTCPEndpoint(t, fmt.Sprintf("%s:%d", host, port))
	e2e.PutEtcd(t, etcd.Client(t), record.Key(record.DefaultPrefix, "app.openmcp.cluster", "eu1", host),
		fmt.Sprintf(`{"host":%q,"owner":"eu1","steering":{"healthCheck":"tcp://:%d"}}`, host, port))
	corefile := func(interval string) string {
		return fmt.Sprintf("openmcp.cluster {\n    ready\n    pprof\n    prometheus :9153\n    gatewaydns {\n        endpoint %s\n        healthcheck-interval %s\n        healthcheck-timeout 50ms\n    }\n}\n",
			etcd.ClientURL, interval)
	}
	p := corednsproc.Start(t, "checks.Corefile", corefile("100ms"))
	p.WaitReady(t, 30*time.Second)
	e2e.WaitFor(t, 10*time.Second, p.DNS, "app.openmcp.cluster.", dns.TypeA, e2e.AnswersWith(host))
	baseG := p.Goroutines(t)
	// Each configuration's checker has checked its target once it went up: the transitions
	// counter, which every checker of the process adds to.
	const wentUp = `coredns_gatewaydns_healthcheck_transitions_total{state="up"}`
	p.WaitMetric(t, 10*time.Second, wentUp, e2e.IsOne)
	held := holdPort(t)
	for i, interval := range []string{"110ms", "120ms", "130ms"} {
		if _, ok := p.ReloadNow(t, corefile(interval), 20*time.Second); !ok {
			t.Fatalf("reload %d to interval %s failed", i, interval)
		}
		p.WaitMetric(t, 10*time.Second, wentUp, func(v float64) bool { return v == float64(i+2) })
		bad := corefile("90ms") + fmt.Sprintf("other.test:%d {\n    bind 127.0.0.1\n    whoami\n}\n", held)
		if _, ok := p.ReloadNow(t, bad, 20*time.Second); ok {
			t.Fatal("a reload onto a held port completed")
		}
	}
	p.WaitReady(t, 10*time.Second)
	p.WaitMetric(t, 10*time.Second, `coredns_gatewaydns_healthcheck_targets{state="up"}`, e2e.IsOne)
	checkOneCheckerRuns(t, p, baseG)
}

// checkOneCheckerRuns fails the test unless p checks at one checker's rate of 130ms, and its
// goroutines are back within a few of baseG.
func checkOneCheckerRuns(t *testing.T, p *corednsproc.Process, baseG int) {
	t.Helper()
	const passed = `coredns_gatewaydns_healthcheck_checks_total{scheme="tcp",result="pass"}`
	from, _ := p.Metric(passed)           // every checker of the process counts here
	window := time.After(2 * time.Second) // a rate, measured over a window
	<-window
	to, _ := p.Metric(passed)
	rate := (to - from) / 2
	t.Logf("%.1f checks a second at a 130ms interval (one checker: 7.7)", rate)
	if rate > 11 {
		t.Errorf("%.1f checks a second: checkers of replaced or rejected configurations still run", rate)
	}
	const slackG = 8
	if endG := e2e.Settle(baseG+slackG, func() int { return p.Goroutines(t) }); endG > baseG+slackG {
		body, _ := p.PProfPage("goroutine?debug=1")
		t.Errorf("goroutines grew from %d to %d after 6 reloads:\n%s", baseG, endG, body[max(0, len(body)-8000):])
	}
}
