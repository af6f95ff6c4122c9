package answer

import (
	"strings"

	"github.com/coredns/coredns/plugin"
)

// MatchZone is plugin.Zones(zones).Matches(name) for a lower-cased name, without its
// allocations on every query: for names and zones without escapes, a zone is a suffix of the
// name that starts at a label.
func MatchZone(zones []string, name string) string {
	if strings.IndexByte(name, '\\') >= 0 {
		return plugin.Zones(zones).Matches(name)
	}
	zone := ""
	for _, z := range zones {
		if strings.IndexByte(z, '\\') >= 0 {
			return plugin.Zones(zones).Matches(name)
		}
		if len(z) <= len(zone) {
			continue
		}
		if z == "." || name == z || (strings.HasSuffix(name, z) && name[len(name)-len(z)-1] == '.') {
			zone = z
		}
	}
	return zone
}
