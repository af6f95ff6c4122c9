package plan

import (
	"slices"
	"testing"

	"github.com/gatewaydns/gatewaydns/internal/declared"
)

// Reasons names every Reason constant declared here, for writer_skipped_total's series at zero.
func TestReasonsNameEveryReason(t *testing.T) {
	want, err := declared.Consts(".", "Reason")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, 0, len(Reasons))
	for _, r := range Reasons {
		got = append(got, string(r))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("Reasons = %v, want every Reason declared: %v", got, want)
	}
}
