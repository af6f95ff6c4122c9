package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
)

// TestReloadSequencesDuringAnOutageKeepAnswering: with etcd refusing, reloads one after
// another, each starting from an instance that may itself answer from its predecessor's
// records: a changed stanza then the same file again, a changed stanza then a change outside
// it, failing reloads around a change, a changed zone list (its zones in common answered from
// the last records loaded, the new one SERVFAIL until etcd answers) and back, and a Corefile
// that fails to parse. Every question is answered from the last records
// loaded (a poll loop and dnsperf: no SERVFAIL) and /ready stays 200 throughout; 20 more
// reloads leave as many goroutines as before. Before, the second reload after a changed
// stanza answered SERVFAIL until etcd came back: it shared the first's feed, which had never
// loaded, and looked for no bridge.
func TestReloadSequencesDuringAnOutageKeepAnswering(t *testing.T) {
	cli, kube, etcdP, url := e2e.OutageLandscape(t)
	ctx := context.Background()
	corefile := func(extra ...string) string {
		src := e2e.BothRoles(url, "sequences", kube.KubeconfigFile, extra...)
		return strings.Replace(src, "    ready\n", "    ready\n    pprof\n", 1)
	}
	p := corednsproc.Start(t, "sequences.Corefile", corefile("negative-ttl 30"))
	p.WaitReady(t, 30*time.Second)
	e2e.WaitFor(t, 10*time.Second, p.DNS, "hand.by.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("198.51.100.7"))

	etcdP.Cut()
	p.WaitMetric(t, 30*time.Second, e2e.ReachableOf, e2e.IsZero)
	answers := e2e.PollDNS(p.DNS, "hand.by.openmcp.cluster.", "198.51.100.7")
	ready := e2e.PollReady(p.Ready)
	load := loadDuring(t, p.DNS, "hand.by.openmcp.cluster A\n", 20*time.Second)

	held := holdPort(t)
	broken := corefile("negative-ttl 39") + fmt.Sprintf("other.test:%d {\n    bind 127.0.0.1\n    whoami\n}\n", held)
	outside := fmt.Sprintf("whoami.test:%d {\n    bind 127.0.0.1\n    whoami\n}\n", corednsproc.FreePort(t))
	steps := []struct {
		name      string
		corefile  string
		completes bool
	}{
		{"a changed stanza", corefile("negative-ttl 31"), true},
		{"the same file again", corefile("negative-ttl 31"), true},
		{"a changed stanza", corefile("negative-ttl 32"), true},
		{"a change outside the stanza", corefile("negative-ttl 32") + outside, true},
		{"a Corefile that fails to start", broken, false},
		{"a changed stanza", corefile("negative-ttl 33"), true},
		{"a Corefile that fails to start", broken, false},
		{"a changed zone list", strings.Replace(corefile("negative-ttl 34"), "openmcp.cluster {", "openmcp.cluster example.org {", 1), true},
		{"a Corefile that fails to parse", corefile("negative-ttl 34", "no-such-option 1"), false},
		{"the zone list as it was", corefile("negative-ttl 35"), true},
	}
	for i, s := range steps {
		took, completed := p.ReloadNow(t, s.corefile, 20*time.Second)
		t.Logf("reload %d, %s, during the outage: completed %v in %s", i+1, s.name, completed, took.Round(time.Millisecond))
		if completed != s.completes {
			t.Errorf("reload %d, %s: completed %v, want %v", i+1, s.name, completed, s.completes)
		}
	}
	answers.Finish(t, "hand.by during the outage and its reload sequences")
	ready.Finish(t)
	load.finish(t, "hand.by during the outage and its reload sequences")

	goroutines := func() int { return p.Goroutines(t) }
	base := goroutines()
	answers = e2e.PollDNS(p.DNS, "hand.by.openmcp.cluster.", "198.51.100.7")
	for i := range 20 {
		if _, completed := p.ReloadNow(t, corefile(fmt.Sprintf("negative-ttl %d", 40+i%2)), 20*time.Second); !completed {
			t.Fatalf("reload %d of 20 did not complete", i+1)
		}
	}
	answers.Finish(t, "hand.by during 20 more reloads")
	const slack = 8 // in-flight queries and HTTP keep-alives, not a stanza's dozens
	end := e2e.Settle(base+slack, goroutines)
	t.Logf("20 reloads during the outage: goroutines %d -> %d", base, end)
	if end > base+slack {
		t.Errorf("goroutines grew from %d to %d over 20 reloads during the outage", base, end)
	}

	if _, err := cli.Put(ctx, "/skydns/cluster/openmcp/by/later/1", `{"host":"198.51.100.8"}`); err != nil {
		t.Fatal(err)
	}
	etcdP.Restore()
	e2e.WaitFor(t, 15*time.Second, p.DNS, "later.by.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("198.51.100.8"))
}
