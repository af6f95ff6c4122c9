// Package corednsproc runs the built coredns binary (testenv.CoreDNSBinary) for end-to-end
// tests: free loopback ports, and a Corefile's health, ready and prometheus listeners moved
// onto them.
package corednsproc

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"testing"
)

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
