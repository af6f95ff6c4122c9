package index

import "unsafe"

// strs writes many strings into a few arrays, so that a set of thousands of records costs a
// few allocations for their keys or hosts, not one each. A string written refers into an
// array, which is only appended to within its capacity and never cut: what a string refers to
// is never written again. A full array is left to the strings in it, not copied.
type strs struct{ b []byte }

// maxStrsChunk is the most an array grows to: each is twice the last, from the first
// string's size (a set of one record takes no more than its string), up to this.
const maxStrsChunk = 64 << 10

// newStrs has room for size bytes in its first array.
func newStrs(size int) strs {
	if size == 0 {
		return strs{}
	}
	return strs{b: make([]byte, 0, size)}
}

// room makes room for n more bytes in the array and returns the mark where the next string
// starts. The caller appends at most n bytes to s.b.
func (s *strs) room(n int) int {
	if cap(s.b)-len(s.b) < n {
		s.b = make([]byte, 0, max(min(2*cap(s.b), maxStrsChunk), n))
	}
	return len(s.b)
}

// since is the string written since mark m.
func (s *strs) since(m int) string {
	if m == len(s.b) {
		return ""
	}
	return unsafe.String(&s.b[m], len(s.b)-m)
}
