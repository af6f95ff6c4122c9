package index

import (
	"slices"
	"testing"
	"unsafe"
)

// A million records take a million entries and two million nodes: their sizes are the memory
// budget (BenchmarkIndexMemory), and a field added is to be paid for somewhere else.
func TestNodesAndEntriesKeepTheirSize(t *testing.T) {
	if got := unsafe.Sizeof(node{}); got != 32 {
		t.Errorf("a node takes %d bytes, want 32", got)
	}
	if got := unsafe.Sizeof(entry{}); got != 80 {
		t.Errorf("an entry takes %d bytes, want 80 (a size class of the allocator)", got)
	}
}

// The sources of a record come back from their string as the writer listed them, however
// many and whatever they hold.
func TestSourcesComeBackAsListed(t *testing.T) {
	for _, list := range [][]string{
		nil,
		{"HTTPRoute/shop/web"},
		{""},
		{"\x00starts with NUL"},
		{"HTTPRoute/a/x", "Gateway/a/gw"},
		{"", "x", ""},
		{string(make([]byte, 300))},
	} {
		if got := decodeSources(encodeSources(list)); !slices.Equal(got, list) {
			t.Errorf("%q came back as %q", list, got)
		}
	}
}
