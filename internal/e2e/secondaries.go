package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/secondary"
)

// Secondary is an enterprise secondary (Knot or NSD, from Debian's packages: .ci/run installs
// them) run by a test on a loopback port as a secondary of the zone openmcp.cluster.
type Secondary struct {
	Kind    string // "knot" or "nsd"
	DNS     string // host:port
	Primary string // host:port
	TSIG    *TSIGKey
	Persist bool   // Knot keeps its copy across a restart (in its journal), and its timers
	Catalog string // Knot serves the member zones of this catalog, not openmcp.cluster
	dir     string
	cmd     *exec.Cmd
	log     *processLog
	done    chan error
}

// TSIGKey is a TSIG key that a secondary requires on NOTIFY.
type TSIGKey struct{ Name, Secret string }

// NewSecondary picks the port and directory of a secondary of primary; Start runs it.
func NewSecondary(t testing.TB, kind, primary string, tsig *TSIGKey) *Secondary {
	t.Helper()
	s := &Secondary{Kind: kind, DNS: fmt.Sprintf("127.0.0.1:%d", corednsproc.FreePort(t)), Primary: primary, TSIG: tsig, dir: t.TempDir(), log: new(processLog)}
	t.Cleanup(func() {
		s.Stop(t)
		if t.Failed() || os.Getenv("GATEWAYDNS_E2E_LOGS") != "" {
			t.Logf("%s %s output:\n%s", kind, s.DNS, s.log.String())
		}
	})
	return s
}

// Start runs the secondary (again, after Stop, with what it held on disk).
func (s *Secondary) Start(t testing.TB) {
	t.Helper()
	_, port, _ := strings.Cut(s.DNS, ":")
	_, pport, _ := strings.Cut(s.Primary, ":")
	c := secondary.Config{Kind: s.Kind, Dir: s.dir, Port: port, PrimaryPort: pport, Persist: s.Persist, Catalog: s.Catalog}
	if s.TSIG != nil {
		c.Key = &secondary.Key{Name: s.TSIG.Name, Secret: s.TSIG.Secret}
	}
	cmd, err := secondary.Command(c)
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = cmd
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.done = make(chan error, 1)
	go func() { s.done <- s.cmd.Wait() }()
}

// Stop ends the secondary, by its pid, within 10 s.
func (s *Secondary) Stop(t testing.TB) {
	if s.cmd == nil {
		return
	}
	defer func() { s.cmd = nil }()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		t.Errorf("%s did not stop within 10s of SIGTERM", s.Kind)
	}
}

// Log is what the secondary wrote so far.
func (s *Secondary) Log() string { return s.log.String() }

// processLog is a process's output, read by the test while the process writes it.
type processLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *processLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *processLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
