package gatewaydns

import (
	"errors"
	"testing"

	"github.com/coredns/caddy"
)

type component struct {
	name    string
	stopped int
}

func (c *component) stop() error { c.stopped++; return nil }

func TestRegistrySharesByKeyAndStopsOnTheLastRelease(t *testing.T) {
	r := newRegistry[*component]()
	starts := 0
	start := func(name string) func() (*component, error) {
		return func() (*component, error) { starts++; return &component{name: name}, nil }
	}
	a, _ := r.acquire("k", start("a"))
	b, _ := r.acquire("k", start("b"))
	if a != b || starts != 1 {
		t.Fatalf("two acquires of one key started %d components (%s, %s), want one shared", starts, a.name, b.name)
	}
	if err := r.release("k", a); err != nil || a.stopped != 0 {
		t.Fatalf("the first release stopped the component (stopped %d, err %v); it is still held", a.stopped, err)
	}
	if err := r.release("k", b); err != nil || a.stopped != 1 {
		t.Fatalf("the last release: stopped %d times (err %v), want once", a.stopped, err)
	}
	c, _ := r.acquire("k", start("c"))
	if c == a || starts != 2 {
		t.Fatalf("an acquire after the last release reused the stopped component")
	}
	if err := r.release("k", a); err != nil || c.stopped != 0 {
		t.Fatal("releasing a component that is no longer registered touched the running one")
	}
}

func TestRegistryShareHoldsWhatItFinds(t *testing.T) {
	r := newRegistry[*component]()
	old, _ := r.acquire("old", func() (*component, error) { return &component{name: "old"}, nil })
	if _, ok := r.share(func(c *component) bool { return c.name == "none" }); ok {
		t.Fatal("share found a component nothing matches")
	}
	got, ok := r.share(func(c *component) bool { return c.name == "old" })
	if !ok || got != old {
		t.Fatal("share did not find the running component")
	}
	_ = r.release("old", old) // its starter lets go: the bridge still holds it
	if old.stopped != 0 || !r.any(func(c *component) bool { return c == old }) {
		t.Fatal("a component held by share was stopped by another release")
	}
	_ = r.release("old", got)
	if old.stopped != 1 || r.any(func(c *component) bool { return c == old }) {
		t.Fatal("the last release did not stop and forget the component")
	}
}

func TestRegistryStartErrorRegistersNothing(t *testing.T) {
	r := newRegistry[*component]()
	boom := errors.New("boom")
	if _, err := r.acquire("k", func() (*component, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("acquire: %v, want the start error", err)
	}
	c, err := r.acquire("k", func() (*component, error) { return &component{name: "c"}, nil })
	if err != nil || c == nil || c.name != "c" {
		t.Fatalf("after a failed start, acquire did not start anew: %v %v", c, err)
	}
}

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
		_, st := newStanza(cfg)
		return st
	}
	next := parseStanza("gatewaydns openmcp.cluster {\n endpoint http://127.0.0.1:1\n min-lease-ttl 45\n}")
	if next.ready() {
		t.Fatal("a stanza with nothing to take over is ready before its first load")
	}

	running := parseStanza("gatewaydns openmcp.cluster {\n endpoint http://127.0.0.1:1\n}")
	f, _ := feeds.acquire(running.own.key, func() (*feed, error) { return running.own, nil }) // not started: no etcd
	t.Cleanup(func() { feeds.mu.Lock(); delete(feeds.byKey, f.key); feeds.mu.Unlock() })
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
