package source

import (
	"slices"
	"testing"

	"github.com/gatewaydns/gatewaydns/internal/declared"
)

// Causes names every Cause constant declared here: a cause left out would have no
// source_rejections_total series before its first rejection, and an alert on the increase
// would miss that one.
func TestCausesNameEveryCause(t *testing.T) {
	want, err := declared.Consts(".", "Cause")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range Causes {
		got = append(got, string(c))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("Causes = %v, want every Cause declared: %v", got, want)
	}
}
