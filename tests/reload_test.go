package tests

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// reloadingProcess is the binary running a Corefile that the test rewrites to make the reload
// plugin restart the server.
type reloadingProcess struct {
	conf                       string
	DNS, Metrics, Ready, PProf string
	cmd                        *exec.Cmd
	log                        *processLog
	done                       chan error
}

// reloadCorefile is the Corefile of round n: the comment and min-lease-ttl change every round,
// so its hash does. Each instance serves transfers and sends a NOTIFY at its start (to itself:
// answered at once), so that the notifier of every instance is started and stopped too.
func (p *reloadingProcess) corefile(endpoint string, n int) string {
	return fmt.Sprintf(`# reload round %d
zone.test:%s {
    reload 2s 0s
    ready %s
    prometheus %s
    pprof %s
    gatewaydns {
        endpoint %s
        min-lease-ttl %ds
        notify %s
    }
    transfer {
        to %s
    }
}
`, n, strings.TrimPrefix(p.DNS, "127.0.0.1:"), p.Ready, p.Metrics, p.PProf, endpoint, 30+n, p.DNS, p.DNS)
}

func startReloading(t *testing.T, endpoint string) *reloadingProcess {
	t.Helper()
	p := &reloadingProcess{
		conf:    filepath.Join(t.TempDir(), "Corefile"),
		DNS:     fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		Metrics: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		Ready:   fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		PProf:   fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		log:     new(processLog),
		done:    make(chan error, 1),
	}
	if err := os.WriteFile(p.conf, []byte(p.corefile(endpoint, 0)), 0o644); err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(corednsBinary(t), "-conf", p.conf)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
				t.Errorf("coredns did not stop within 10s of SIGTERM")
			}
		}
		if t.Failed() {
			t.Logf("coredns output:\n%s", p.log.String())
		}
	})
	return p
}

// goroutines reads the total of the goroutine profile.
func (p *reloadingProcess) goroutines(t *testing.T) int {
	t.Helper()
	body, code := httpGet("http://" + p.PProf + "/debug/pprof/goroutine?debug=1")
	first, _, _ := strings.Cut(body, "\n")
	n, err := strconv.Atoi(strings.TrimPrefix(first, "goroutine profile: total "))
	if code != 200 || err != nil {
		t.Fatalf("goroutine profile: HTTP %d %q", code, first)
	}
	return n
}

func (p *reloadingProcess) fds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return len(ents)
}

// reloadTo writes round n's Corefile and waits until the log reports one more completed reload.
func (p *reloadingProcess) reloadTo(t *testing.T, endpoint string, n int) time.Duration {
	t.Helper()
	before := strings.Count(p.log.String(), "Reloading complete")
	start := time.Now()
	if err := os.WriteFile(p.conf, []byte(p.corefile(endpoint, n)), 0o644); err != nil {
		t.Fatal(err)
	}
	for time.Since(start) < 20*time.Second {
		select {
		case err := <-p.done:
			t.Fatalf("coredns exited during reload %d: %v", n, err)
		default:
		}
		if strings.Count(p.log.String(), "Reloading complete") > before {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("reload %d not complete within 20s", n)
	return 0
}

// settle waits until f is at most limit, up to 15s, and returns its last value.
func settle(limit int, f func() int) int {
	deadline := time.Now().Add(15 * time.Second)
	for {
		v := f()
		if v <= limit || time.Now().After(deadline) {
			return v
		}
		time.Sleep(250 * time.Millisecond)
	}
}

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
	p := startReloading(t, etcd.ClientURL)
	waitFor(t, 30*time.Second, p.DNS, "r0.zone.test.", dns.TypeA, hasAnswer)

	// One reload first: what a first reload sets up once (and keeps) is not a leak.
	p.reloadTo(t, etcd.ClientURL, 1)
	waitFor(t, 10*time.Second, p.DNS, "r0.zone.test.", dns.TypeA, hasAnswer)
	time.Sleep(time.Second)
	baseG, baseFD := p.goroutines(t), p.fds(t)

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
			r, err := exchange(netw, p.DNS, fmt.Sprintf("r%d.zone.test.", n), dns.TypeA)
			if netw == "tcp" && droppedByShutdown(err) {
				// The old instance's server closes a TCP connection it accepted just before
				// it stopped without reading it (miekg/dns serveTCPConn checks isStarted
				// first), whatever the plugins: a client asks again, as RFC 7766 says.
				retried.Add(1)
				r, err = exchange(netw, p.DNS, fmt.Sprintf("r%d.zone.test.", n), dns.TypeA)
			}
			asked.Add(1)
			if want := fmt.Sprintf("10.30.0.%d", n+1); err != nil || !answersWith(want)(r) {
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
		slowest = max(slowest, p.reloadTo(t, etcd.ClientURL, n))
	}
	// A change after the last reload reaches the last instance.
	if _, err := cli.Put(ctx, "/skydns/test/zone/after/1", `{"host":"10.30.1.1"}`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, p.DNS, "after.zone.test.", dns.TypeA, answersWith("10.30.1.1"))
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
	endG := settle(baseG+slackG, func() int { return p.goroutines(t) })
	endFD := settle(baseFD+slackFD, func() int { return p.fds(t) })
	t.Logf("%d reloads in %s (slowest %s); %d questions, %d failed, %d TCP questions asked again; goroutines %d -> %d, fds %d -> %d",
		reloads, time.Since(start).Round(time.Millisecond), slowest.Round(time.Millisecond), asked.Load(), len(failures), retried.Load(), baseG, endG, baseFD, endFD)
	if n := retried.Load(); n > int64(reloads) {
		t.Errorf("%d TCP connections dropped over %d reloads: more than the one a reload can catch mid-accept", n, reloads)
	}
	if endG > baseG+slackG {
		body, _ := httpGet("http://" + p.PProf + "/debug/pprof/goroutine?debug=1")
		t.Errorf("goroutines grew from %d to %d over %d reloads: a leak\n%s", baseG, endG, reloads, body)
	}
	if endFD > baseFD+slackFD {
		t.Errorf("open file descriptors grew from %d to %d over %d reloads: a leak", baseFD, endFD, reloads)
	}
	metrics, _ := httpGet("http://" + p.Metrics + "/metrics")
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
