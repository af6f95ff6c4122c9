package corednsproc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/promtext"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// The tests' side of a Process: started for a test and stopped at its end, with its Corefile
// and output logged when the test failed; waits that fail the test.

// Prepare picks the ports of a process that p.Start starts later (see New).
func Prepare(t testing.TB, name string) *Process {
	t.Helper()
	p, err := New(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Start runs the binary under test (testenv.CoreDNSBinary) with corefile, its DNS port and
// its health, ready, metrics and pprof listeners moved to free loopback ports, env added to
// this environment. It does not wait for readiness (WaitReady).
func Start(t testing.TB, name, corefile string, env ...string) *Process {
	t.Helper()
	p := Prepare(t, name)
	p.Start(t, corefile, env...)
	return p
}

// Start runs p, made by Prepare, as the function Start does. The Corefile is written to a file
// called name (".Corefile" added unless it ends so). The process is stopped when the test
// ends: one that does not exit within 10 s of SIGTERM fails the test. Its Corefile and output
// are logged when the test failed, or with GATEWAYDNS_E2E_LOGS=1.
func (p *Process) Start(t testing.TB, corefile string, env ...string) {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, p.Name)
	if !strings.HasSuffix(conf, ".Corefile") {
		conf += ".Corefile"
	}
	err := p.Run(Config{Binary: testenv.CoreDNSBinary(t), Conf: conf, Log: strings.TrimSuffix(conf, ".Corefile") + ".log", Env: env}, corefile)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Child // a test may stop p and start it again: each run is stopped and shown
	t.Cleanup(func() {
		if !c.Stop(syscall.SIGTERM, 10*time.Second) {
			t.Errorf("coredns %s did not stop within 10s of SIGTERM", p.Name)
		}
		if t.Failed() || os.Getenv("GATEWAYDNS_E2E_LOGS") != "" {
			b, _ := os.ReadFile(c.Log)
			t.Logf("coredns %s, Corefile:\n%s\noutput:\n%s", p.Name, p.Localize(corefile), b)
		}
	})
}

// Stop ends the process with SIGTERM, as Kubernetes does; one that does not exit within 10 s
// fails the test. p.Start may start it again, on the same ports.
func (p *Process) Stop(t testing.TB) {
	t.Helper()
	if !p.Child.Stop(syscall.SIGTERM, 10*time.Second) {
		t.Errorf("coredns %s did not stop within 10s of SIGTERM", p.Name)
	}
}

// WaitReady polls the ready plugin until it says OK; the process's exit fails the test at once.
func (p *Process) WaitReady(t testing.TB, timeout time.Duration) {
	t.Helper()
	if _, err := p.AwaitReady(timeout, 20*time.Millisecond); err != nil {
		t.Fatalf("%v\n%s", err, p.Output())
	}
}

// WaitMetric polls until cond holds for the value of the series selector names (0 when it is
// not exported), and returns that value.
func (p *Process) WaitMetric(t testing.TB, timeout time.Duration, selector string, cond func(float64) bool) float64 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, _ := p.Metric(selector)
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v: condition not met within %s", selector, v, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitOutput waits until the process has written line, and fails the test with its output
// after timeout.
func (p *Process) WaitOutput(t testing.TB, line string, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !strings.Contains(p.Output(), line); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("coredns %s wrote no %q within %s:\n%s", p.Name, line, timeout, p.Output())
		}
	}
}

// WaitExported waits until /metrics exports a series selector names: the process is up and
// its stanza started.
func (p *Process) WaitExported(t testing.TB, timeout time.Duration, selector string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		body, err := p.Scrape(nil)
		if err == nil && len(promtext.Matching(body, selector)) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not exported within %s:\n%s", selector, timeout, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Sigterm stops the process as Kubernetes does and returns how long it took to exit. One
// still running after limit fails the test, with the goroutine dump SIGQUIT makes it write.
func (p *Process) Sigterm(t testing.TB, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := p.Child.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Child.Exited():
		return time.Since(start)
	case <-time.After(limit):
		_ = p.Child.Cmd.Process.Signal(syscall.SIGQUIT) // the goroutine dump shows what it waits on
		<-p.Child.Exited()
		t.Errorf("did not exit within %s of SIGTERM:\n%s", limit, testenv.LogTail(p.Child.Log, 400))
		return limit
	}
}

// ReloadNow makes the process read its Corefile (rewritten to src, localized) again, as the
// reload plugin does, through SIGUSR1, and waits until the log says the reload completed or
// failed. It returns how long that took and whether it completed.
func (p *Process) ReloadNow(t testing.TB, src string, limit time.Duration) (time.Duration, bool) {
	t.Helper()
	if err := os.WriteFile(p.Conf, []byte(p.Localize(src)), 0o644); err != nil {
		t.Fatal(err)
	}
	log := p.Output()
	completed, failed := strings.Count(log, "Reloading complete"), strings.Count(log, "Restart failed")
	start := time.Now()
	if err := p.Child.Cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	for time.Since(start) < limit {
		log = p.Output()
		if strings.Count(log, "Reloading complete") > completed {
			return time.Since(start), true
		}
		if strings.Count(log, "Restart failed") > failed {
			return time.Since(start), false
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("reload neither completed nor failed within %s:\n%s", limit, testenv.LogTail(p.Child.Log, 60))
	return 0, false
}

// Goroutines reads the process's goroutine count from its pprof listener (the Corefile has a
// pprof line).
func (p *Process) Goroutines(t testing.TB) int {
	t.Helper()
	body, err := p.PProfPage("goroutine?debug=1")
	first, _, _ := strings.Cut(body, "\n")
	n, perr := strconv.Atoi(strings.TrimPrefix(first, "goroutine profile: total "))
	if err != nil || perr != nil {
		t.Fatalf("goroutine profile: %v %q", err, first)
	}
	return n
}

// FDs is the number of files the process holds open.
func (p *Process) FDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.PID()))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return len(ents)
}
