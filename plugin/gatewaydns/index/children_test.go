package index

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Children behave as one sorted map whether they are a list or, past maxFew, a table and
// chunks, across chunk splits, chunks emptied, the table grown, and the way back to a list; a
// label too long for a node is found as a short one is.
func TestChildrenAreASortedMapAtAnySize(t *testing.T) {
	for _, n := range []int{0, 1, maxFew - 1, maxFew, maxFew + 1, 3 * maxFew, maxChunk + 1, 5 * maxChunk} {
		t.Run(fmt.Sprintf("%d children", n), func(t *testing.T) {
			tr := newTree("/skydns/")
			parent := tr.root
			want := map[string]nodeID{}
			set := func(name string) {
				c := tr.newNode(name)
				if old := tr.child(parent, name); old != 0 {
					tr.removeChild(parent, old)
					tr.addChild(parent, c)
					tr.release(old)
				} else {
					tr.addChild(parent, c)
				}
				want[name] = c
			}
			remove := func(name string) {
				if c := tr.child(parent, name); c != 0 {
					tr.removeChild(parent, c)
					tr.release(c)
				}
				delete(want, name)
			}
			label := func(i int) string {
				name := fmt.Sprintf("k%d", i*7919%max(n, 1))
				if i%3 == 0 {
					name += strings.Repeat("-long", 4) // past inlineLen
				}
				return name
			}
			for i := range n {
				set(label(i))
			}
			if n > 0 {
				set(label(0))
			}
			check := func() {
				t.Helper()
				if got := tr.kids(parent); got != len(want) {
					t.Fatalf("%d children, want %d", got, len(want))
				}
				for name, id := range want {
					if got := tr.child(parent, name); got != id {
						t.Fatalf("child(%q) = %d, want %d", name, got, id)
					}
				}
				if tr.child(parent, "absent") != 0 {
					t.Fatal("child of an absent name found a node")
				}
				var names []string
				for name, id := range tr.children(parent) {
					if want[name] != id {
						t.Fatalf("children yielded %q with node %d, want %d", name, id, want[name])
					}
					names = append(names, name)
				}
				if len(names) != len(want) || !slices.IsSorted(names) {
					t.Fatalf("children yielded %d names, want %d in byte order: %q", len(names), len(want), names)
				}
			}
			check()
			for i := 0; i < n; i += 2 {
				remove(label(i))
			}
			remove("absent")
			check()
			for name := range want {
				remove(name)
			}
			check()
			set("again")
			check()
		})
	}
}

// kids is how many children id has.
func (t *tree) kids(id nodeID) int {
	n := t.at(id)
	if m := n.many(); m != 0 {
		return t.many.at(m).n
	}
	count := 0
	for k := n.first(); k != 0; k = t.at(k).next {
		count++
	}
	return count
}
