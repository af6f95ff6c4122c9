package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// EnvCoreDNS names the binary under test; make test sets it to the ./coredns make build wrote.
const EnvCoreDNS = "GATEWAYDNS_COREDNS"

var (
	corednsOnce sync.Once
	corednsDir  string
	corednsPath string
	corednsErr  error
)

// CoreDNSBinary is the binary under test: $GATEWAYDNS_COREDNS when set, else built once per
// test process as make build builds it (static, -trimpath) into a temporary directory that
// RemoveBuiltCoreDNS removes.
func CoreDNSBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EnvCoreDNS); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	corednsOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			corednsErr = err
			return
		}
		if corednsDir, corednsErr = os.MkdirTemp("", "gatewaydns-bin"); corednsErr != nil {
			return
		}
		corednsPath = filepath.Join(corednsDir, "coredns")
		cmd := exec.Command("go", "build", "-trimpath", "-o", corednsPath, "./cmd/coredns")
		cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			corednsErr = fmt.Errorf("go build ./cmd/coredns: %v\n%s", err, out)
		}
	})
	if corednsErr != nil {
		t.Fatal(corednsErr)
	}
	return corednsPath
}

// RemoveBuiltCoreDNS removes the binary CoreDNSBinary built, if it built one: for TestMain.
func RemoveBuiltCoreDNS() {
	if corednsDir != "" {
		os.RemoveAll(corednsDir)
	}
}
