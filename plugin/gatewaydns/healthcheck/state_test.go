package healthcheck

import (
	"strings"
	"testing"
)

// TestThresholds runs sequences of results ('+' passed, '-' failed) through the state machine
// with down after 2 failures and up after 2 passes, and the state after each.
func TestThresholds(t *testing.T) {
	for _, tc := range []struct {
		behaviour string
		results   string
		states    string // U unknown, u up, d down: one per result
	}{
		{"a first pass brings an unknown target up at once", "+", "u"},
		{"one failure is not enough to go down", "+-", "uu"},
		{"two failures in a row go down", "+--", "uud"},
		{"a pass between failures starts the count again", "+-+-", "uuuu"},
		{"an unknown target that fails goes down after two", "--", "Ud"},
		{"one pass does not bring a down target up", "--+", "Udd"},
		{"two passes in a row do", "--++", "Uddu"},
		{"a failure between passes keeps it down", "--+-+", "Udddd"},
		{"up, down, up, down again", "+--++--", "uudduud"},
		{"a target failing once then passing never goes down", "-+-+-+", "Uuuuuu"},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			var r run
			var got strings.Builder
			for _, c := range tc.results {
				r = r.next(c == '+', 2, 2)
				got.WriteByte(map[State]byte{Unknown: 'U', Up: 'u', Down: 'd'}[r.state])
			}
			if got.String() != tc.states {
				t.Fatalf("results %s: states %s, want %s", tc.results, got.String(), tc.states)
			}
		})
	}
}

// TestThresholdsOfOne: with down after 1 and up after 1 every result decides.
func TestThresholdsOfOne(t *testing.T) {
	var r run
	for i, c := range "+-+-" {
		r = r.next(c == '+', 1, 1)
		if want := map[rune]State{'+': Up, '-': Down}[c]; r.state != want {
			t.Fatalf("result %d (%c): %s, want %s", i, c, r.state, want)
		}
	}
}
