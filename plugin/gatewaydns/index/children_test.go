package index

import (
	"fmt"
	"slices"
	"testing"
)

// Children behave as one map whether they sit in the slice or, past maxFew, in a map.
func TestChildrenAreAMapAtAnySize(t *testing.T) {
	for _, n := range []int{0, 1, maxFew - 1, maxFew, maxFew + 1, 3 * maxFew} {
		t.Run(fmt.Sprintf("%d children", n), func(t *testing.T) {
			var c children
			want := map[string]*node{}
			for i := range n {
				name := fmt.Sprintf("k%d", i)
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
				var got []*node
				for nd := range c.all {
					got = append(got, nd)
				}
				if len(got) != len(want) {
					t.Fatalf("all yielded %d nodes, want %d", len(got), len(want))
				}
				for _, nd := range want {
					if !slices.Contains(got, nd) {
						t.Fatal("all left a node out")
					}
				}
			}
			check()
			for i := 0; i < n; i += 2 {
				name := fmt.Sprintf("k%d", i)
				c.remove(name)
				delete(want, name)
			}
			c.remove("absent")
			check()
		})
	}
}
