package tests

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/secondary"
)

// An enterprise secondary (Knot or NSD, from Debian's packages: .ci/run installs them) run by
// a test on a loopback port as a secondary of the zone openmcp.cluster.
type enterpriseSecondary struct {
	kind    string // "knot" or "nsd"
	DNS     string // host:port
	primary string // host:port
	tsig    *tsigKey
	persist bool   // Knot keeps its copy across a restart (in its journal), and its timers
	catalog string // Knot serves the member zones of this catalog, not openmcp.cluster
	dir     string
	cmd     *exec.Cmd
	log     *processLog
	done    chan error
}

// tsigKey is a TSIG key that a secondary requires on NOTIFY.
type tsigKey struct{ name, secret string }

// newEnterpriseSecondary picks the port and directory of a secondary of primary; start runs it.
func newEnterpriseSecondary(t *testing.T, kind, primary string, tsig *tsigKey) *enterpriseSecondary {
	t.Helper()
	s := &enterpriseSecondary{kind: kind, DNS: fmt.Sprintf("127.0.0.1:%d", freePort(t)), primary: primary, tsig: tsig, dir: t.TempDir(), log: new(processLog)}
	t.Cleanup(func() {
		s.stop(t)
		if t.Failed() || os.Getenv("GATEWAYDNS_E2E_LOGS") != "" {
			t.Logf("%s %s output:\n%s", kind, s.DNS, s.log.String())
		}
	})
	return s
}

// start runs the secondary (again, after stop, with what it held on disk).
func (s *enterpriseSecondary) start(t *testing.T) {
	t.Helper()
	_, port, _ := strings.Cut(s.DNS, ":")
	_, pport, _ := strings.Cut(s.primary, ":")
	c := secondary.Config{Kind: s.kind, Dir: s.dir, Port: port, PrimaryPort: pport, Persist: s.persist, Catalog: s.catalog}
	if s.tsig != nil {
		c.Key = &secondary.Key{Name: s.tsig.name, Secret: s.tsig.secret}
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

// stop ends the secondary, by its pid, within 10 s.
func (s *enterpriseSecondary) stop(t *testing.T) {
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
		t.Errorf("%s did not stop within 10s of SIGTERM", s.kind)
	}
}
