package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
)

// TestAServerThatNeverReachesEtcdSaysWhyOnce: a central server whose etcd endpoint refuses
// connections answers SERVFAIL (nothing loaded), which the errors plugin logs for every query;
// beside those lines, its log names the connection error once, however many queries and
// retries follow. Before, 2,759 "records not loaded from etcd yet" in 32 minutes, and the
// connection error never.
func TestAServerThatNeverReachesEtcdSaysWhyOnce(t *testing.T) {
	p := corednsproc.Start(t, "central.Corefile", centralOn([]string{fmt.Sprintf("http://127.0.0.1:%d", corednsproc.FreePort(t))}))
	const why = "etcd unreachable for /skydns/cluster/openmcp/ since the start"
	start := time.Now()
	asked := 0
	for !strings.Contains(p.Output(), why) {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("no line saying why within 20s, after %d queries:\n%s", asked, p.Output())
		}
		if r, err := e2e.Exchange("udp", p.DNS, "a.openmcp.cluster.", dns.TypeA); err == nil && r.Rcode != dns.RcodeServerFailure {
			t.Fatalf("answered %s before anything loaded", dns.RcodeToString[r.Rcode])
		}
		asked++
		time.Sleep(50 * time.Millisecond) // the pace of the queries, not a wait for a condition
	}
	said := time.Since(start)
	// Queries on, until the load has failed once more: still one line.
	const failedGets = `coredns_gatewaydns_etcd_errors_total{op="get"}`
	before, _ := p.Metric(failedGets)
	for {
		if now, _ := p.Metric(failedGets); now >= before+1 {
			break
		}
		if time.Since(start) > said+30*time.Second {
			t.Fatalf("the load did not fail once more within 30s (%s %v)", failedGets, before)
		}
		_, _ = e2e.Exchange("udp", p.DNS, "a.openmcp.cluster.", dns.TypeA)
		asked++
		time.Sleep(50 * time.Millisecond) // the pace of the queries
	}
	log := p.Output()
	if n := strings.Count(log, why); n != 1 {
		t.Errorf("said why %d times, want once:\n%s", n, log)
	}
	line := log[strings.Index(log, why):]
	line = line[:strings.IndexByte(line, '\n')]
	if !strings.Contains(line, "connection refused") {
		t.Errorf("the line does not name the connection error: %s", line)
	}
	t.Logf("after %v and %d queries: %s", said.Round(time.Millisecond), asked, line)
}
