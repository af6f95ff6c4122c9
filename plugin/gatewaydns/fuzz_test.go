package gatewaydns

import (
	"strings"
	"testing"

	"github.com/coredns/caddy"
)

// FuzzParse: the stanza parser never panics on any Corefile text, and every error it returns
// names the line it is about ("Testfile:N"), as an operator needs to fix it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"gatewaydns",
		"gatewaydns openmcp.cluster 10.in-addr.arpa {\n endpoint http://e1:2379 http://e2:2379\n path /dns\n credentials user secret\n fallthrough in-addr.arpa\n min-lease-ttl 1m\n max-lease-ttl 3600\n no_apex_fallback\n}",
		"gatewaydns {\n endpiont http://x\n}",
		"gatewaydns {\n min-lease-ttl -5s\n}",
		"gatewaydns {\n max-lease-ttl 99999999999h\n}",
		"gatewaydns {\n tls a b c d\n}",
		"gatewaydns {\n owner c1\n domain-filter eu1.openmcp.cluster\n policy sync\n}",
		"gatewaydns {\n publish-only\n}",
		"gatewaydns {\n owner a/b\n}",
		"gatewaydns {\n stubzones\n debug\n upstream 8.8.8.8\n}",
		"gatewaydns\ngatewaydns",
		"gatewaydns {\n endpoint\n}",
		"gatewaydns {\n{\n}",
		"gatewaydns \"unterminated",
		"gatewaydns {\n credentials only-one\n}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		// The tls option reads files; keep fuzzing off the file system.
		if strings.Contains(input, "tls") || strings.Contains(input, "kubeconfig") {
			return
		}
		c := caddy.NewTestController("dns", input)
		cfg, err := parse(c)
		if err != nil {
			if !strings.Contains(err.Error(), "Testfile:") {
				t.Fatalf("parse(%q): error does not name a line: %v", input, err)
			}
			return
		}
		if cfg == nil {
			t.Fatalf("parse(%q): no error and no config", input)
		}
	})
}
