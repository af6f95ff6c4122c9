package e2e

import (
	"testing"

	"github.com/coredns/caddy"
	corednstest "github.com/coredns/coredns/test"

	_ "github.com/gatewaydns/gatewaydns/cmd/coredns/plugins" // the binary's plugin chain
)

// StartCoreDNS runs a Corefile in this process, as the binary would, and stops it at cleanup.
func StartCoreDNS(t testing.TB, corefile string) *caddy.Instance {
	t.Helper()
	inst, err := corednstest.CoreDNSServer(corefile)
	if err != nil {
		t.Fatalf("starting CoreDNS: %v\n%s", err, corefile)
	}
	t.Cleanup(func() {
		inst.Stop()
		for _, err := range inst.ShutdownCallbacks() {
			t.Errorf("shutting CoreDNS down: %v", err)
		}
	})
	return inst
}
