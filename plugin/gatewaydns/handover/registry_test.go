package handover

import (
	"errors"
	"testing"
)

type component struct {
	name    string
	stopped int
}

func (c *component) Stop() error { c.stopped++; return nil }

func TestRegistrySharesByKeyAndStopsOnTheLastRelease(t *testing.T) {
	r := NewRegistry[*component]()
	starts := 0
	start := func(name string) func() (*component, error) {
		return func() (*component, error) { starts++; return &component{name: name}, nil }
	}
	a, _ := r.Acquire("k", start("a"))
	b, _ := r.Acquire("k", start("b"))
	if a != b || starts != 1 {
		t.Fatalf("two acquires of one key started %d components (%s, %s), want one shared", starts, a.name, b.name)
	}
	if err := r.Release("k", a); err != nil || a.stopped != 0 {
		t.Fatalf("the first release stopped the component (stopped %d, err %v); it is still held", a.stopped, err)
	}
	if err := r.Release("k", b); err != nil || a.stopped != 1 {
		t.Fatalf("the last release: stopped %d times (err %v), want once", a.stopped, err)
	}
	c, _ := r.Acquire("k", start("c"))
	if c == a || starts != 2 {
		t.Fatalf("an acquire after the last release reused the stopped component")
	}
	if err := r.Release("k", a); err != nil || c.stopped != 0 {
		t.Fatal("releasing a component that is no longer registered touched the running one")
	}
}

func TestRegistryShareHoldsWhatItFinds(t *testing.T) {
	r := NewRegistry[*component]()
	old, _ := r.Acquire("old", func() (*component, error) { return &component{name: "old"}, nil })
	if _, ok := r.Share(func(c *component) bool { return c.name == "none" }); ok {
		t.Fatal("share found a component nothing matches")
	}
	got, ok := r.Share(func(c *component) bool { return c.name == "old" })
	if !ok || got != old {
		t.Fatal("share did not find the running component")
	}
	_ = r.Release("old", old) // its starter lets go: the bridge still holds it
	if old.stopped != 0 || !r.Any(func(c *component) bool { return c == old }) {
		t.Fatal("a component held by share was stopped by another release")
	}
	_ = r.Release("old", got)
	if old.stopped != 1 || r.Any(func(c *component) bool { return c == old }) {
		t.Fatal("the last release did not stop and forget the component")
	}
}

func TestRegistryStartErrorRegistersNothing(t *testing.T) {
	r := NewRegistry[*component]()
	boom := errors.New("boom")
	if _, err := r.Acquire("k", func() (*component, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("acquire: %v, want the start error", err)
	}
	c, err := r.Acquire("k", func() (*component, error) { return &component{name: "c"}, nil })
	if err != nil || c == nil || c.name != "c" {
		t.Fatalf("after a failed start, acquire did not start anew: %v %v", c, err)
	}
}
