package corednsproc

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/child"
	"github.com/gatewaydns/gatewaydns/internal/promtext"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// Process is the binary running one Corefile on loopback ports, its output in a log file that
// the test shows when it fails.
type Process struct {
	Name                        string
	DNS, Health, Ready, Metrics string // host:port
	proc                        *child.Process
}

// Start runs the binary with corefile, its DNS port and its health, ready and metrics
// listeners moved to free loopback ports, env added to this environment. The process is
// stopped when the test ends.
func Start(t testing.TB, name, corefile string, env ...string) *Process {
	t.Helper()
	ports := Ports(t, 4)
	p := &Process{Name: name,
		DNS:     fmt.Sprintf("127.0.0.1:%d", ports[0]),
		Health:  fmt.Sprintf("127.0.0.1:%d", ports[1]),
		Ready:   fmt.Sprintf("127.0.0.1:%d", ports[2]),
		Metrics: fmt.Sprintf("127.0.0.1:%d", ports[3]),
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, name+".Corefile")
	corefile = Localize(corefile, p.Health, p.Ready, p.Metrics)
	if err := os.WriteFile(conf, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testenv.CoreDNSBinary(t), "-conf", conf, "-dns.port", fmt.Sprint(ports[0]))
	cmd.Env = append(os.Environ(), env...)
	proc, err := child.Start(name, filepath.Join(dir, name+".log"), cmd)
	if err != nil {
		t.Fatal(err)
	}
	p.proc = proc
	t.Cleanup(func() {
		p.proc.Stop(syscall.SIGTERM, 10*time.Second)
		if t.Failed() || os.Getenv("GATEWAYDNS_E2E_LOGS") != "" {
			b, _ := os.ReadFile(proc.Log)
			t.Logf("coredns %s, Corefile:\n%s\noutput:\n%s", name, corefile, b)
		}
	})
	return p
}

// WaitReady polls the ready plugin until it says OK.
func (p *Process) WaitReady(t testing.TB, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !p.proc.Running() {
			t.Fatalf("coredns %s exited before it was ready: %v", p.Name, p.proc.Err())
		}
		if resp, err := http.Get("http://" + p.Ready + "/ready"); err == nil { // #nosec G107 -- loopback
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("coredns %s not ready within %s", p.Name, timeout)
}

// Kill ends the process abruptly, as a crashed pod.
func (p *Process) Kill() { p.proc.Stop(syscall.SIGKILL, time.Second) }

// Scrape is the process's /metrics in the text format, read with client (nil: the default).
func (p *Process) Scrape(client *http.Client) (string, error) {
	if client == nil {
		client = http.DefaultClient
	}
	return promtext.Scrape(client, "http://"+p.Metrics+"/metrics")
}
