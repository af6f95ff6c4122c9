// Package corednsproc runs the coredns binary on loopback ports: the one CoreDNS process of
// the end-to-end tests, make bench and make demo. A Corefile's health, ready, prometheus and
// pprof listeners are moved onto ports of the process's own (Localize), its output goes to a
// log file, and the process dies with the one that started it (package child).
//
// process.go is what every caller shares (New, Run, AwaitReady, Output); testing.go is the
// tests' side (Start, WaitReady, the waits on metrics, reloads and stops they check).
package corednsproc

import (
	"regexp"
	"testing"

	"github.com/gatewaydns/gatewaydns/internal/freeport"
)

// FreePort is a loopback port free for both UDP and TCP, as a DNS listener needs, and
// handed to no other process a test starts (see freeport).
func FreePort(t testing.TB) int {
	t.Helper()
	return Ports(t, 1)[0]
}

// Ports are n distinct free ports, each handed out once (see freeport).
func Ports(t testing.TB, n int) []int {
	t.Helper()
	ports, err := freeport.Take(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// sidecarPlugins matches the lines of the plugins that listen on a fixed default port, and
// the brace that opens a block of options after them.
var sidecarPlugins = regexp.MustCompile(`(?m)^(\s*)(health|ready|prometheus|pprof)\b[^\n{]*(\{?)`)

// Localize moves the listeners of the health, ready, prometheus and pprof plugins in a
// Corefile to the given addresses; a block of options after one (health's lameduck) stays.
func Localize(corefile, health, ready, metrics, pprof string) string {
	return sidecarPlugins.ReplaceAllStringFunc(corefile, func(line string) string {
		m := sidecarPlugins.FindStringSubmatch(line)
		addr := map[string]string{"health": health, "ready": ready, "prometheus": metrics, "pprof": pprof}[m[2]]
		if m[3] != "" {
			return m[1] + m[2] + " " + addr + " {"
		}
		return m[1] + m[2] + " " + addr
	})
}
