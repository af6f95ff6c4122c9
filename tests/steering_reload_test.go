package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// TestReloadsLeaveNoHealthCheckBehind: the health checks run with the stanza's feed, which a
// reload that changes how they run replaces. After reloads that change the checks' interval,
// and reloads that fail (a port held), one checker runs: the process checks at the last
// interval's rate, not at one rate per configuration that ever started, and the goroutines are
// back near where they were.
func TestReloadsLeaveNoHealthCheckBehind(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	const host = "127.0.0.31"
	port := freePort(t)
	newTCPEndpoint(t, fmt.Sprintf("%s:%d", host, port))
	putEtcd(t, etcd.Client(t), record.Key(record.DefaultPrefix, "app.openmcp.cluster", "eu1", host),
		fmt.Sprintf(`{"host":%q,"owner":"eu1","steering":{"healthCheck":"tcp://:%d"}}`, host, port))
	pprof := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	corefile := func(interval string) string {
		return fmt.Sprintf("openmcp.cluster {\n    ready\n    pprof %s\n    prometheus :9153\n    gatewaydns {\n        endpoint %s\n        healthcheck-interval %s\n        healthcheck-timeout 50ms\n    }\n}\n",
			pprof, etcd.ClientURL, interval)
	}
	p := newCoreDNSProcess(t)
	startProcess(t, p, "checks.Corefile", corefile("100ms"))
	p.waitReady(t, 30*time.Second)
	waitFor(t, 10*time.Second, p.DNS, "app.openmcp.cluster.", dns.TypeA, answersWith(host))
	goroutines := goroutinesAt(t, pprof)
	baseG := goroutines()

	// Each configuration's checker has checked its target once it went up: the transitions
	// counter, which every checker of the process adds to.
	const wentUp = `coredns_gatewaydns_healthcheck_transitions_total{state="up"}`
	p.waitMetric(t, 10*time.Second, wentUp, isOne)
	held := holdPort(t)
	for i, interval := range []string{"110ms", "120ms", "130ms"} {
		if _, ok := p.reloadNow(t, corefile(interval), 20*time.Second); !ok {
			t.Fatalf("reload %d to interval %s failed", i, interval)
		}
		p.waitMetric(t, 10*time.Second, wentUp, func(v float64) bool { return v == float64(i+2) })
		bad := corefile("90ms") + fmt.Sprintf("other.test:%d {\n    bind 127.0.0.1\n    whoami\n}\n", held)
		if _, ok := p.reloadNow(t, bad, 20*time.Second); ok {
			t.Fatal("a reload onto a held port completed")
		}
	}
	p.waitReady(t, 10*time.Second)
	p.waitMetric(t, 10*time.Second, `coredns_gatewaydns_healthcheck_targets{state="up"}`, isOne)
	const passed = `coredns_gatewaydns_healthcheck_checks_total{scheme="tcp",result="pass"}`
	from, _ := p.metric(passed)           // every checker of the process counts here
	window := time.After(2 * time.Second) // a rate, measured over a window
	<-window
	to, _ := p.metric(passed)
	rate := (to - from) / 2
	t.Logf("%.1f checks a second at a 130ms interval (one checker: 7.7)", rate)
	if rate > 11 {
		t.Errorf("%.1f checks a second: checkers of replaced or rejected configurations still run", rate)
	}
	const slackG = 8
	if endG := settle(baseG+slackG, goroutines); endG > baseG+slackG {
		body, _ := httpGet("http://" + pprof + "/debug/pprof/goroutine?debug=1")
		t.Errorf("goroutines grew from %d to %d after 6 reloads:\n%s", baseG, endG, lastLines(body, 80))
	}
	body, _ := httpGet("http://" + p.Metrics + "/metrics")
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "coredns_gatewaydns_healthcheck_targets{") && !strings.HasSuffix(l, " 0") && !strings.Contains(l, `state="up"`) {
			t.Errorf("a target counted in another state too: %s", l)
		}
	}
}
