// Package corednsproc runs the built coredns binary (testenv.CoreDNSBinary) for end-to-end
// tests: free loopback ports, and a Corefile's health, ready and prometheus listeners moved
// onto them.
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
