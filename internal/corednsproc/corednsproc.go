// Package corednsproc runs the built coredns binary for end-to-end tests: which binary, free
// loopback ports, and a Corefile's health, ready and prometheus listeners moved onto them.
package corednsproc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	builtPath string
	buildErr  error
)

// Binary is the binary under test: $GATEWAYDNS_COREDNS when set (make test sets it to the
// ./coredns that make build wrote), else built once for this test run.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("GATEWAYDNS_COREDNS"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gatewaydns-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtPath = filepath.Join(dir, "coredns")
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		cmd := exec.Command("go", "build", "-o", builtPath, "./cmd/coredns")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtPath
}

// FreePort is a loopback port free for both UDP and TCP, as a DNS listener needs.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no free port for UDP and TCP")
	return 0
}

// Ports are n distinct free ports: a port FreePort closed can come back from the next call
// (seen: the ready and prometheus plugins given one port, and the process never ready).
func Ports(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for len(ports) < n {
		if p := FreePort(t); !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports
}

// sidecarPlugins matches the lines of the plugins that listen on a fixed default port.
var sidecarPlugins = regexp.MustCompile(`(?m)^(\s*)(health|ready|prometheus)\b[^\n{]*`)

// Localize moves the listeners of the health, ready and prometheus plugins in a Corefile to
// the given addresses.
func Localize(corefile, health, ready, metrics string) string {
	return sidecarPlugins.ReplaceAllStringFunc(corefile, func(line string) string {
		m := sidecarPlugins.FindStringSubmatch(line)
		addr := map[string]string{"health": health, "ready": ready, "prometheus": metrics}[m[2]]
		return m[1] + m[2] + " " + addr
	})
}
