package index

import (
	"fmt"
	"slices"
	"testing"
)

// Children behave as one sorted map whether they sit in the slice or, past maxFew, in a map
// and chunks, across chunk splits and chunks emptied.
func TestChildrenAreASortedMapAtAnySize(t *testing.T) {
	for _, n := range []int{0, 1, maxFew - 1, maxFew, maxFew + 1, 3 * maxFew, maxChunk + 1, 5 * maxChunk} {
		t.Run(fmt.Sprintf("%d children", n), func(t *testing.T) {
			var c children
			want := map[string]*node{}
			for i := range n {
				name := fmt.Sprintf("k%d", i*7919%max(n, 1))
				want[name] = &node{}
				c.set(name, want[name])
			}
			replaced := &node{}
			if n > 0 {
				c.set("k0", replaced)
				want["k0"] = replaced
			}
			check := func() {
				t.Helper()
				if c.len() != len(want) {
					t.Fatalf("len %d, want %d", c.len(), len(want))
				}
				for name, nd := range want {
					if c.get(name) != nd {
						t.Fatalf("get(%q) is not the node set", name)
					}
				}
				if c.get("absent") != nil {
					t.Fatal("get of an absent name found a node")
				}
				var names []string
				for name, nd := range c.named {
					if want[name] != nd {
						t.Fatalf("named yielded %q with another node than the one set", name)
					}
					names = append(names, name)
				}
				if len(names) != len(want) || !slices.IsSorted(names) {
					t.Fatalf("named yielded %d names, want %d in byte order: %q", len(names), len(want), names)
				}
			}
			check()
			for i := 0; i < n; i += 2 {
				name := fmt.Sprintf("k%d", i*7919%max(n, 1))
				c.remove(name)
				delete(want, name)
			}
			c.remove("absent")
			check()
			for name := range want {
				c.remove(name)
				delete(want, name)
			}
			check()
			want["again"] = &node{}
			c.set("again", want["again"])
			check()
		})
	}
}
