package index

import (
	"strings"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/request"
)

// The SOA serial of a zone is the etcd revision of the last change under the zone's prefix:
// it grows with every change and is the same on every server that follows one etcd, so the
// secondaries of different replicas agree, and a secondary of one replica can fail over to
// another. It is the revision's low 32 bits: serials compare in RFC 1982 arithmetic, so a
// wrap past 2^32 revisions is still a step forward for a secondary that transferred within
// the last 2^31 revisions.
//
// A load sees only live keys: the revision of a delete after the newest of them is not in
// it. The watcher replays the history between the two (Replayed), so that a server that loads
// fresh ends at the same serial as one that followed the deletes as they came.

// SerialAfter reports whether serial a is after b in RFC 1982 arithmetic: the one comparison
// of serials, for the journal, the transfers and the tools that follow a secondary.
func SerialAfter(a, b uint32) bool { return a != b && int32(a-b) > 0 } // #nosec G115 -- RFC 1982

// noteChangeLocked moves the serial of each zone holding key to rev, if that is later: a
// change outside a zone (in a parent zone the same stanza serves) leaves its serial alone.
func (ix *Index) noteChangeLocked(key string, rev int64) {
	noteSerial(ix.serials, ix.opts.ZonePrefixes, key, rev)
}

// noteSerial moves serials[p] to rev for each of zones (key prefixes) that key lies under.
func noteSerial(serials map[string]int64, zones []string, key string, rev int64) {
	for _, p := range zones {
		if strings.HasPrefix(key, p) && rev > serials[p] {
			serials[p] = rev
		}
	}
}

// zonePrefixOf is the longest of Options.ZonePrefixes that key lies under, "" when none.
func (ix *Index) zonePrefixOf(key string) string { return longestPrefix(ix.opts.ZonePrefixes, key) }

// prefixOf is the longest of Options.Prefixes that key lies under, "" when none.
func (ix *Index) prefixOf(key string) string { return longestPrefix(ix.opts.Prefixes, key) }

// longestPrefix is the longest of prefixes that key starts with, "" when none.
func longestPrefix(prefixes []string, key string) string {
	best := ""
	for _, p := range prefixes {
		if len(p) > len(best) && strings.HasPrefix(key, p) {
			best = p
		}
	}
	return best
}

// Replayed tells the index of a change at rev under prefix that the last Load of prefix holds
// already (a delete between its newest key and its revision): only the serial moves.
func (ix *Index) Replayed(prefix string, rev int64) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.gen++
	// Which key the change was is not known: every zone within prefix takes it.
	for _, p := range ix.opts.ZonePrefixes {
		if strings.HasPrefix(p, prefix) && rev > ix.serials[p] {
			ix.serials[p] = rev
		}
		if strings.HasPrefix(p, prefix) {
			ix.journal.rebase(p, rev) // a change the journal does not hold
		}
	}
}

// Revision is the etcd revision of the last change the index holds under the prefix that
// serves name; 0 before any.
func (ix *Index) Revision(name string) int64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.serials[ix.zonePrefixOfName(name)]
}

// zonePrefixOfName is the key prefix of the zone that serves name.
func (ix *Index) zonePrefixOfName(name string) string {
	return ix.zonePrefixOf(msg.Path(name, ix.opts.Prefix) + "/")
}

// Serial implements plugin.ServiceBackend: the revision of the zone's last change, as a SOA
// serial (see above), with the offset of a zone with health-checked names (steerserial.go).
func (ix *Index) Serial(state request.Request) uint32 {
	name := state.Zone
	if name == "" {
		name = state.Name()
	}
	return ix.ZoneSerial(name)
}
