package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// TestReloadKeepsAnsweringAndLeaksNothing rewrites the Corefile of a running binary again and
// again (10 times; 50 with GATEWAYDNS_SOAK=1) while a loop asks DNS questions: no question
// fails, and afterwards goroutines and open file descriptors are back near the baseline, so a
// watch, an etcd client or a listener left behind by each reload fails the test.
func TestReloadKeepsAnsweringAndLeaksNothing(t *testing.T) {
	reloads := 10
	if os.Getenv("GATEWAYDNS_SOAK") == "1" {
		reloads = 50
	}
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	ctx := context.Background()
	for i := range 5 {
		if _, err := cli.Put(ctx, fmt.Sprintf("/skydns/test/zone/r%d/1", i), fmt.Sprintf(`{"host":"10.30.0.%d"}`, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	p := e2e.StartReloading(t, etcd.ClientURL)
	e2e.WaitFor(t, 30*time.Second, p.DNS, "r0.zone.test.", dns.TypeA, e2e.HasAnswer)

	// One reload first: what a first reload sets up once (and keeps) is not a leak.
	e2e.ReloadTo(t, p, etcd.ClientURL, 1)
	e2e.WaitFor(t, 10*time.Second, p.DNS, "r0.zone.test.", dns.TypeA, e2e.HasAnswer)
	time.Sleep(time.Second)
	baseG, baseFD := p.Goroutines(t), p.FDs(t)

	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		asked    atomic.Int64
		retried  atomic.Int64 // TCP questions asked again after a reload dropped their connection
		failures []string
		mu       sync.Mutex
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			netw := "udp"
			if i%5 == 0 {
				netw = "tcp"
			}
			n := i % 5
			r, err := e2e.Exchange(netw, p.DNS, fmt.Sprintf("r%d.zone.test.", n), dns.TypeA)
			if netw == "tcp" && droppedByShutdown(err) {
				// The old instance's server closes a TCP connection it accepted just before
				// it stopped without reading it (miekg/dns serveTCPConn checks isStarted
				// first), whatever the plugins: a client asks again, as RFC 7766 says.
				retried.Add(1)
				r, err = e2e.Exchange(netw, p.DNS, fmt.Sprintf("r%d.zone.test.", n), dns.TypeA)
			}
			asked.Add(1)
			if want := fmt.Sprintf("10.30.0.%d", n+1); err != nil || !e2e.AnswersWith(want)(r) {
				mu.Lock()
				if err != nil {
					failures = append(failures, fmt.Sprintf("%s %s r%d: %v", time.Now().Format("15:04:05.000"), netw, n, err))
				} else {
					failures = append(failures, fmt.Sprintf("%s %s r%d: rcode=%s answers=%v", time.Now().Format("15:04:05.000"), netw, n, dns.RcodeToString[r.Rcode], r.Answer))
				}
				mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	var slowest time.Duration
	start := time.Now()
	for n := 2; n < reloads+2; n++ {
		slowest = max(slowest, e2e.ReloadTo(t, p, etcd.ClientURL, n))
	}
	// A change after the last reload reaches the last instance.
	if _, err := cli.Put(ctx, "/skydns/test/zone/after/1", `{"host":"10.30.1.1"}`); err != nil {
		t.Fatal(err)
	}
	e2e.WaitFor(t, 10*time.Second, p.DNS, "after.zone.test.", dns.TypeA, e2e.AnswersWith("10.30.1.1"))
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()

	mu.Lock()
	if len(failures) > 0 {
		t.Errorf("%d of %d questions failed during %d reloads; first ones:\n%s", len(failures), asked.Load(), reloads, strings.Join(failures[:min(len(failures), 20)], "\n"))
	}
	mu.Unlock()

	// A leak of one per reload exceeds these; goroutines of in-flight queries and HTTP
	// keep-alives fit in them.
	const slackG, slackFD = 8, 4
	endG := e2e.Settle(baseG+slackG, func() int { return p.Goroutines(t) })
	endFD := e2e.Settle(baseFD+slackFD, func() int { return p.FDs(t) })
	t.Logf("%d reloads in %s (slowest %s); %d questions, %d failed, %d TCP questions asked again; goroutines %d -> %d, fds %d -> %d",
		reloads, time.Since(start).Round(time.Millisecond), slowest.Round(time.Millisecond), asked.Load(), len(failures), retried.Load(), baseG, endG, baseFD, endFD)
	if n := retried.Load(); n > int64(reloads) {
		t.Errorf("%d TCP connections dropped over %d reloads: more than the one a reload can catch mid-accept", n, reloads)
	}
	if endG > baseG+slackG {
		body, _ := p.PProfPage("goroutine?debug=1")
		t.Errorf("goroutines grew from %d to %d over %d reloads: a leak\n%s", baseG, endG, reloads, body)
	}
	if endFD > baseFD+slackFD {
		t.Errorf("open file descriptors grew from %d to %d over %d reloads: a leak", baseFD, endFD, reloads)
	}
	metrics, _ := e2e.HTTPGet("http://" + p.Metrics + "/metrics")
	if strings.Contains(metrics, "coredns_reload_failed_total 1") {
		t.Errorf("a reload failed:\n%s", metrics)
	}
	if !regexp.MustCompile(`coredns_gatewaydns_notifies_total\{[^}]*\} [1-9]`).MatchString(metrics) {
		t.Errorf("no instance sent a NOTIFY: the notifiers did not run\n%s", metrics)
	}
}

// droppedByShutdown tells whether a TCP exchange failed because the server closed the
// connection without an answer, as a stopping server does to one it has not read yet.
func droppedByShutdown(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}
