package statelog

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

// step sets subject to state; reset, when true, calls Reset instead.
type step struct {
	subject string
	state   string
	reset   bool
}

func TestStatesReportOnlyChanges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
		want  []string // "subject: prev -> state", one per report
	}{
		{name: "the zero state at the start is no change", steps: []step{{subject: "a", state: ""}}, want: nil},
		{name: "a first state other than the zero one is a change",
			steps: []step{{subject: "a", state: "down"}}, want: []string{`a: "" -> "down"`}},
		{name: "a repeat is not reported",
			steps: []step{{subject: "a", state: "down"}, {subject: "a", state: "down"}, {subject: "a", state: "down"}},
			want:  []string{`a: "" -> "down"`}},
		{name: "each change is reported with the state before",
			steps: []step{{subject: "a", state: "down"}, {subject: "a", state: "up"}, {subject: "a", state: "down"}},
			want:  []string{`a: "" -> "down"`, `a: "down" -> "up"`, `a: "up" -> "down"`}},
		{name: "subjects change on their own",
			steps: []step{{subject: "a", state: "down"}, {subject: "b", state: "down"}, {subject: "a", state: "down"}},
			want:  []string{`a: "" -> "down"`, `b: "" -> "down"`}},
		{name: "after a reset the same state is news again",
			steps: []step{{subject: "a", state: "refused"}, {reset: true}, {subject: "a", state: "refused"}},
			want:  []string{`a: "" -> "refused"`, `a: "" -> "refused"`}},
		{name: "after a reset the zero state is still no change",
			steps: []step{{subject: "a", state: "refused"}, {reset: true}, {subject: "a", state: ""}},
			want:  []string{`a: "" -> "refused"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st States[string, string]
			var got []string
			for _, s := range tc.steps {
				if s.reset {
					st.Reset()
					continue
				}
				st.Set(s.subject, s.state, func(prev string) { got = append(got, fmt.Sprintf("%s: %q -> %q", s.subject, prev, s.state)) })
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("reports %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStateReportsOnlyChanges(t *testing.T) {
	var st State[int]
	var got []int
	for _, s := range []int{0, 1, 1, -1, -1, 1} {
		st.Set(s, func(prev int) { got = append(got, prev, s) })
	}
	if want := []int{0, 1, 1, -1, -1, 1}; !slices.Equal(got, want) {
		t.Errorf("reports (prev, state) %v, want %v", got, want)
	}
}

// Concurrent changes are reported in the order they were made: the last report is of the
// state the subject is in, so a gauge set in the report ends right.
func TestStateReportsConcurrentChangesInTheirOrder(t *testing.T) {
	for range 50 {
		var st State[int]
		var mu sync.Mutex // the report's own lock, as a gauge has one
		reported := 0
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				st.Set(i%3, func(int) {
					mu.Lock()
					reported = i % 3
					mu.Unlock()
				})
			})
		}
		wg.Wait()
		mu.Lock()
		last := reported
		mu.Unlock()
		st.Set(last, func(prev int) { t.Fatalf("the last report says %d, the state is %d", last, prev) })
	}
}

func TestForgetDropsOneSubject(t *testing.T) {
	var st States[string, string]
	var told []string
	tell := func(subject string) func(string) {
		return func(prev string) { told = append(told, subject+" from "+prev) }
	}
	st.Set("a", "down", tell("a"))
	st.Set("b", "down", tell("b"))
	st.Forget("a")
	if st.Len() != 1 {
		t.Fatalf("%d subjects after forgetting one of two", st.Len())
	}
	st.Set("a", "down", tell("a")) // news again
	st.Set("b", "down", tell("b")) // still known
	if want := []string{"a from ", "b from ", "a from "}; !slices.Equal(told, want) {
		t.Fatalf("told %q, want %q", told, want)
	}
}
