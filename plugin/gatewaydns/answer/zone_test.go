package answer

import (
	"testing"

	"github.com/coredns/coredns/plugin"
)

func TestMatchZoneIsPluginZonesMatches(t *testing.T) {
	zoneSets := [][]string{
		{"openmcp.cluster."},
		{"openmcp.cluster.", "eu1.openmcp.cluster.", "10.in-addr.arpa."},
		{"."},
		{".", "cluster."},
		{`a\.b.test.`, "test."},
	}
	names := []string{
		"openmcp.cluster.", "app.eu1.openmcp.cluster.", "eu1.openmcp.cluster.", "xopenmcp.cluster.",
		"cluster.", ".", "1.0.0.10.in-addr.arpa.", "other.test.", `x\.openmcp.cluster.`,
		`a\.b.test.`, "a.b.test.", `openmcp\.cluster.`,
	}
	for _, zones := range zoneSets {
		for _, name := range names {
			if got, want := MatchZone(zones, name), plugin.Zones(zones).Matches(name); got != want {
				t.Errorf("zones %q, name %q: got %q, want %q", zones, name, got, want)
			}
		}
	}
}
