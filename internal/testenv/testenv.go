// Package testenv starts real components for integration tests: an etcd
// server (StartEtcd) and a kube-apiserver with the Gateway API CRDs
// installed (StartKubeAPIServer).
//
// The binaries are not downloaded at test time: hack/build-test-binaries.sh
// (`make test-binaries`) builds etcd, etcdctl and kube-apiserver from the Go
// module proxy into <repo>/bin. FindBinary looks for them there, or in the
// directory named by $GATEWAYDNS_TEST_BIN.
//
// A missing binary fails the test (integration tests must not silently skip
// in CI) unless GATEWAYDNS_SKIP_INTEGRATION=1 is set, in which case the test
// is skipped.
package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const (
	// EnvTestBin names a directory searched for binaries before <repo>/bin
	// (a relative path is taken from the repository root).
	EnvTestBin = "GATEWAYDNS_TEST_BIN"
	// EnvSkipIntegration, set to "1", turns a missing binary into a skip
	// instead of a failure.
	EnvSkipIntegration = "GATEWAYDNS_SKIP_INTEGRATION"

	rootModule = "github.com/gatewaydns/gatewaydns"
)

// FindBinary returns the absolute path of the executable name, looked up in
// $GATEWAYDNS_TEST_BIN (relative: to the repository root) and then
// <repo root>/bin. If it is in neither, the
// test fails with a hint to run `make test-binaries`, or is skipped when
// GATEWAYDNS_SKIP_INTEGRATION=1.
func FindBinary(t testing.TB, name string) string {
	t.Helper()
	var dirs []string
	root, rootErr := RepoRoot()
	if d := os.Getenv(EnvTestBin); d != "" {
		if !filepath.IsAbs(d) && rootErr == nil {
			d = filepath.Join(root, d)
		}
		dirs = append(dirs, d)
	}
	if rootErr == nil {
		dirs = append(dirs, filepath.Join(root, "bin"))
	} else {
		t.Logf("testenv: %v", rootErr)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			if abs, err := filepath.Abs(p); err == nil {
				return abs
			}
			return p
		}
	}
	msg := fmt.Sprintf("testenv: %s binary not found (looked in %s); run `make test-binaries` "+
		"(hack/build-test-binaries.sh) to build it, or point $%s at a directory holding it",
		name, strings.Join(dirs, ", "), EnvTestBin)
	if os.Getenv(EnvSkipIntegration) == "1" {
		t.Skip(msg + " [skipped: " + EnvSkipIntegration + "=1]")
	}
	t.Fatal(msg + " (set " + EnvSkipIntegration + "=1 to skip integration tests instead)")
	return ""
}

// ToolBinary returns a binary that `make test-binaries` builds from the module proxy with
// builtBy (promtool, external-dns), found as FindBinary finds binaries. Building it takes
// minutes, so a plain `go test` that does not set $GATEWAYDNS_TEST_BIN skips the test. With the
// variable set (make test sets it) a missing binary fails the test, as FindBinary does: a run
// meant to be whole does not pass by leaving a test out.
func ToolBinary(t testing.TB, name, builtBy string) string {
	t.Helper()
	if os.Getenv(EnvTestBin) == "" {
		t.Skipf("testenv: tests that need %s run only with $%s set (make test sets it; %s builds bin/%s)",
			name, EnvTestBin, builtBy, name)
	}
	return FindBinary(t, name)
}

var (
	repoRootOnce sync.Once
	repoRoot     string
	repoRootErr  error
)

// RepoRoot returns the directory holding the go.mod of module
// github.com/gatewaydns/gatewaydns, found by walking up from the working
// directory (go test runs tests in their package directory).
func RepoRoot() (string, error) {
	repoRootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			repoRootErr = err
			return
		}
		for {
			if isRootModule(filepath.Join(dir, "go.mod")) {
				repoRoot = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
		repoRootErr = fmt.Errorf("no go.mod of module %s above the working directory", rootModule)
	})
	return repoRoot, repoRootErr
}

func isRootModule(gomod string) bool {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == rootModule
		}
	}
	return false
}

// LogTail returns the last n lines of the file at path, for a failure message.
func LogTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d earlier lines in %s)", len(lines)-n, path)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// logOnFailure registers a cleanup that prints the tail of the log file when
// the test failed. Register it before the cleanup that stops the process so
// that it runs after it (cleanups run last-in first-out) and sees the
// shutdown messages too.
func logOnFailure(t testing.TB, what, path string) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("testenv: %s log (last %d lines of %s):\n%s", what, tailLines, path, LogTail(path, tailLines))
		}
	})
}

const tailLines = 80

// runOutput runs a command and returns its trimmed stdout.
func runOutput(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
