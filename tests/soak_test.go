package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/dnsperf"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// soakCorefile serves the zone without the log plugin: a line per query would make the
// process's output, not the server, what the test measures.
const soakCorefile = `openmcp.cluster {
    ready
    prometheus
    gatewaydns {
        endpoint {$GATEWAYDNS_ETCD_ENDPOINTS}
    }
}
`

// soakDuration is how long the load lasts: 10s in the default run, 60s with GATEWAYDNS_SOAK=1
// (make soak).
func soakDuration() time.Duration {
	if os.Getenv("GATEWAYDNS_SOAK") == "1" {
		return 60 * time.Second
	}
	return 10 * time.Second
}

// TestServesUnderLoadWhileRecordsChurn runs the binary under sustained dnsperf load while 1000
// names change 1000 times a second in etcd: no question gets an error answer or goes
// unanswered, the last value written for every name is what the server answers after the
// churn stops (no lost update), and the server's memory stays flat.
func TestServesUnderLoadWhileRecordsChurn(t *testing.T) {
	perf, err := exec.LookPath("dnsperf")
	if err != nil {
		t.Skip("dnsperf is not installed (Debian package dnsperf; .ci/run installs it)")
	}
	const names = 1000
	const writesPerSecond = 1000
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	ctx := context.Background()

	key := func(i int) string { return fmt.Sprintf("/skydns/cluster/openmcp/eu1/churn%d/1", i) }
	addr := func(i, gen int) string { return fmt.Sprintf("10.%d.%d.%d", gen%250, i/250, i%250) }
	value := func(i, gen int) string { return fmt.Sprintf(`{"host":%q,"ttl":30}`, addr(i, gen)) }
	for i := 0; i < names; i += 100 {
		var ops []clientv3.Op
		for j := i; j < i+100; j++ {
			ops = append(ops, clientv3.OpPut(key(j), value(j, 0)))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, "/skydns/cluster/openmcp/eu1/static/1", `{"host":"203.0.113.1"}`); err != nil {
		t.Fatal(err)
	}

	p := corednsproc.Start(t, "soak.Corefile", soakCorefile, "GATEWAYDNS_ETCD_ENDPOINTS="+strings.Join(etcd.Endpoints(), ","))
	p.WaitReady(t, 10*time.Second)

	// The question mix: names that keep changing, a name that does not, a name that does not
	// exist, and AAAA questions that have no data.
	var queries strings.Builder
	for i := range names {
		fmt.Fprintf(&queries, "churn%d.eu1.openmcp.cluster A\n", i)
	}
	queries.WriteString("static.eu1.openmcp.cluster A\nmissing.eu1.openmcp.cluster A\nchurn7.eu1.openmcp.cluster AAAA\n")
	data := filepath.Join(t.TempDir(), "queries")
	if err := os.WriteFile(data, []byte(queries.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	// The churn: every 10ms one transaction of 10 puts, each name in turn getting its next
	// generation's address. A generation is counted only once its transaction committed, and
	// stopping never cancels a transaction in flight: gens is exactly what etcd holds last.
	var written atomic.Int64
	gens := make([]int, names)
	stopChurn := make(chan struct{})
	churnDone := make(chan error, 1)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		next := 0
		for {
			select {
			case <-stopChurn:
				churnDone <- nil
				return
			case <-tick.C:
			}
			var ops []clientv3.Op
			batch := make(map[int]int, writesPerSecond/100)
			for range writesPerSecond / 100 {
				i := next % names
				batch[i] = gens[i] + 1
				ops = append(ops, clientv3.OpPut(key(i), value(i, batch[i])))
				next++
			}
			txnCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := cli.Txn(txnCtx).Then(ops...).Commit()
			cancel()
			if err != nil {
				churnDone <- fmt.Errorf("churn write: %w", err)
				return
			}
			for i, gen := range batch {
				gens[i] = gen
			}
			written.Add(int64(len(ops)))
		}
	}()

	// Memory, once a second, while the load runs.
	duration := soakDuration()
	var rss []int
	sampleDone := make(chan error, 1)
	go func() {
		for start := time.Now(); time.Since(start) < duration; time.Sleep(time.Second) {
			kb, err := processRSS(p.PID())
			if err != nil {
				sampleDone <- err
				return
			}
			rss = append(rss, kb)
		}
		sampleDone <- nil
	}()

	// A rate the server keeps up with on a shared 2-core machine next to the churn: this is a
	// test of correctness under load, make bench measures the ceiling.
	res, err := dnsperf.Run(ctx, perf, dnsperf.Options{
		Server: p.DNS, Data: data, Duration: duration, Clients: 4, MaxQPS: 5000,
	})
	sampleErr := <-sampleDone
	close(stopChurn)
	if err != nil {
		t.Fatalf("dnsperf: %v", err)
	}
	if sampleErr != nil {
		t.Fatal(sampleErr)
	}
	if err := <-churnDone; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d questions in %s (%.0f/s), %d lost; answers %v; %d writes to etcd; RSS samples (kB) %v",
		res.Completed, duration, res.QPS, res.Lost, res.Rcodes, written.Load(), rss)

	if res.Completed == 0 {
		t.Fatal("dnsperf completed no question")
	}
	for rcode, n := range res.Rcodes {
		if rcode != "NOERROR" && rcode != "NXDOMAIN" {
			t.Errorf("%d answers were %s", n, rcode)
		}
	}
	if want := res.Completed / int64(names+3); res.Rcodes["NXDOMAIN"] > 2*want {
		t.Errorf("%d NXDOMAIN answers, more than the one missing name accounts for (~%d)", res.Rcodes["NXDOMAIN"], want)
	}
	if res.Lost > res.Sent/1000 {
		t.Errorf("%d of %d questions went unanswered", res.Lost, res.Sent)
	}
	if got, want := written.Load(), int64(duration.Seconds()*writesPerSecond*0.8); got < want {
		t.Errorf("only %d writes reached etcd in %s, the churn was meant to make %d", got, duration, want)
	}

	// No lost update: every name answers its last generation.
	deadline := time.Now().Add(5 * time.Second)
	for i := range names {
		want := addr(i, gens[i])
		for {
			r, err := e2e.Exchange("udp", p.DNS, fmt.Sprintf("churn%d.eu1.openmcp.cluster.", i), dns.TypeA)
			if err == nil && len(r.Answer) == 1 && r.Answer[0].(*dns.A).A.String() == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("churn%d: want %s after the churn stopped, got %v (%v)", i, want, r, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// Memory flat: the last quarter of the run holds no more than the second quarter plus a
	// margin for the garbage collector's pacing.
	if q := len(rss) / 4; q >= 1 {
		early, late := maxOf(rss[q:2*q]), maxOf(rss[len(rss)-q:])
		if late > early+30*1024 {
			t.Errorf("RSS grew from %d kB to %d kB under a constant record count", early, late)
		}
	}
}

// processRSS is a process's resident set in kB, from /proc.
func processRSS(pid int) (int, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the RSS: %w", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				return 0, fmt.Errorf("VmRSS %q: %w", rest, err)
			}
			return kb, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
