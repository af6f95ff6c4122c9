package corednsproc

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/child"
	"github.com/gatewaydns/gatewaydns/internal/freeport"
	"github.com/gatewaydns/gatewaydns/internal/promtext"
)

// Process is the binary running one Corefile on loopback ports. New picks the ports (so that
// a Corefile can name a process before it starts: a secondary its primary, a primary its
// secondary), Run or Attach starts it.
type Process struct {
	Name                               string
	DNS, Health, Ready, Metrics, PProf string    // host:port
	Conf                               string    // the Corefile's path, rewritten by a reload
	Started                            time.Time // when the process was started
	Child                              *child.Process
}

// ErrExited is what AwaitReady returns, wrapped, when the process ended before it was ready.
var ErrExited = errors.New("exited")

// New picks the ports of a process to start: dnsPort for its DNS listener (0: a free one), and
// free ones for the health, ready, metrics and pprof listeners.
func New(name string, dnsPort int) (*Process, error) {
	ports, err := freeport.Take(5)
	if err != nil {
		return nil, fmt.Errorf("coredns %s: %w", name, err)
	}
	if dnsPort == 0 {
		dnsPort = ports[0]
	}
	addr := func(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
	return &Process{Name: name, DNS: addr(dnsPort), Health: addr(ports[1]), Ready: addr(ports[2]), Metrics: addr(ports[3]), PProf: addr(ports[4])}, nil
}

// Localize moves the health, ready, prometheus and pprof listeners of corefile to p's ports.
func (p *Process) Localize(corefile string) string {
	return Localize(corefile, p.Health, p.Ready, p.Metrics, p.PProf)
}

// Command writes corefile, localized, to conf and returns the command that runs binary with it
// on p's DNS port: for a caller that starts its processes its own way (pinned to CPUs, their
// PIDs recorded), and then hands the started one to Attach.
func (p *Process) Command(binary, conf, corefile string) (*exec.Cmd, error) {
	if err := os.WriteFile(conf, []byte(p.Localize(corefile)), 0o644); err != nil {
		return nil, fmt.Errorf("coredns %s: %w", p.Name, err)
	}
	p.Conf = conf
	_, port, _ := strings.Cut(p.DNS, ":")
	return exec.Command(binary, "-conf", conf, "-dns.port", port), nil
}

// Attach makes c, started at started from p's Command, p's running process.
func (p *Process) Attach(c *child.Process, started time.Time) { p.Child, p.Started = c, started }

// Config is how Run runs a Corefile.
type Config struct {
	Binary    string   // the coredns binary
	Conf, Log string   // the files the Corefile and the process's output are written to
	Env       []string // added to this process's environment
}

// Run writes corefile, localized, to c.Conf and starts the binary with it.
func (p *Process) Run(c Config, corefile string) error {
	cmd, err := p.Command(c.Binary, c.Conf, corefile)
	if err != nil {
		return err
	}
	cmd.Env = append(os.Environ(), c.Env...)
	started := time.Now()
	proc, err := child.Start(p.Name, c.Log, cmd)
	if err != nil {
		return err
	}
	p.Attach(proc, started)
	return nil
}

// AwaitReady polls the ready plugin every interval until it answers 200, and returns the time
// from the process's start to that answer.
func (p *Process) AwaitReady(timeout, every time.Duration) (time.Duration, error) {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := hc.Get("http://" + p.Ready + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(p.Started), nil
			}
		}
		if !p.Child.Running() {
			return 0, fmt.Errorf("coredns %s %w while starting (%v)", p.Name, ErrExited, p.Child.Err())
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("coredns %s not ready after %v", p.Name, timeout)
		}
		time.Sleep(every)
	}
}

// Output is what the process has written so far (its log file).
func (p *Process) Output() string {
	b, err := os.ReadFile(p.Child.Log)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.Child.Log, err)
	}
	return string(b)
}

// PID is the process's ID.
func (p *Process) PID() int { return p.Child.Cmd.Process.Pid }

// Running reports whether the process has not exited.
func (p *Process) Running() bool { return p.Child.Running() }

// Kill ends the process abruptly, as a crashed pod (no resign, no lease revoke), and waits
// for its end.
func (p *Process) Kill() { p.Child.Stop(syscall.SIGKILL, time.Second) }

// Scrape is the process's /metrics in the text format, read with client (nil: the default).
func (p *Process) Scrape(client *http.Client) (string, error) {
	if client == nil {
		client = http.DefaultClient
	}
	return promtext.Scrape(client, "http://"+p.Metrics+"/metrics")
}

// PProfPage reads a page of the pprof plugin's listener (the Corefile has a pprof line), e.g.
// "goroutine?debug=2" for every goroutine's stack.
func (p *Process) PProfPage(page string) (string, error) {
	resp, err := http.Get("http://" + p.PProf + "/debug/pprof/" + page) // #nosec G107 -- loopback
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("pprof %s: %s", page, resp.Status)
	}
	return string(b), err
}

// Metric is the value of the one series of p's /metrics that selector names (promtext), e.g.
// `coredns_gatewaydns_writer_leader{owner="eu1"}`. ok is false when the series is not
// exported (v is 0) or the selector names several (v is NaN: no condition holds).
func (p *Process) Metric(selector string) (v float64, ok bool) {
	body, err := p.Scrape(nil)
	if err != nil {
		return 0, false
	}
	switch m := promtext.Matching(body, selector); len(m) {
	case 0:
		return 0, false
	case 1:
		return m[0].Value, true
	default:
		return math.NaN(), false
	}
}
