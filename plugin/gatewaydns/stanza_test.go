package gatewaydns

import (
	"testing"

	"github.com/coredns/caddy"
)

// On a reload the ready plugin asks the new instance's stanza before the stanza's own startup
// has run: it must answer for what it will take over (a loaded feed of its zones), and at the
// process's first start, with nothing running, it must not claim to be ready.
func TestStanzaNotStartedIsAsReadyAsWhatItTakesOver(t *testing.T) {
	parseStanza := func(corefile string) *stanza {
		t.Helper()
		cfg, err := parse(caddy.NewTestController("dns", corefile))
		if err != nil {
			t.Fatal(err)
		}
		st := newStanza(cfg)
		return st
	}
	next := parseStanza("gatewaydns openmcp.cluster {\n endpoint http://127.0.0.1:1\n min-lease-ttl 45\n}")
	if next.ready() {
		t.Fatal("a stanza with nothing to take over is ready before its first load")
	}

	running := parseStanza("gatewaydns openmcp.cluster {\n endpoint http://127.0.0.1:1\n}")
	f, _ := feeds.Acquire(running.own.key, func() (*feed, error) { return running.own, nil }) // not started: no etcd
	t.Cleanup(func() { _ = feeds.Release(f.key, f) })                                         // never started: its Stop does nothing
	if next.ready() {
		t.Fatal("ready on behalf of a feed that has not loaded")
	}
	for _, p := range running.prefixes {
		f.index.Load(p, nil)
	}
	if !f.index.Loaded() {
		t.Fatal("test setup: the running feed's index did not count as loaded")
	}
	if !next.ready() {
		t.Error("not ready before its startup, though a loaded feed of its zones will answer for it")
	}
	other := parseStanza("gatewaydns other.test {\n endpoint http://127.0.0.1:1\n}")
	if other.ready() {
		t.Error("ready on behalf of a feed of other zones")
	}
}
