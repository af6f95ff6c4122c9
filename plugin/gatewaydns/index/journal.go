package index

import (
	"slices"
	"sort"
	"strings"
)

// The journal is the history an incremental zone transfer (RFC 1995) is made from. A zone's
// serial is the etcd revision of its last change (serial.go), so a secondary that asks for an
// IXFR from serial s had the zone as it was at revision s: the keys that changed since, each
// with the value it had before its first change after s, are all it takes to build, beside the
// names as they are now, the same names as they were then (ZoneDiff). The journal holds those
// changes as the watch applies them: the revision, the key and the value it replaced, which is
// never changed once stored, so keeping it costs a pointer.
//
// It is bounded in changes, not in time or zones (Options.JournalChanges): at the bound the
// oldest quarter goes. It holds every change of a zone after a revision, and only after it:
// the newest change the bound dropped, and, per zone, the revision of a load (whose keys came
// from a read, not from changes) or of a change the load held already (Replayed). From a serial
// before that an IXFR is the whole zone, as RFC 1995 allows; so it is after a restart or a
// reload that reads etcd again.

// DefaultJournalChanges is how many changes the journal holds by default: some 16 MB at most
// (a change and the value it replaced), a minute of 1,000 changes a second.
const DefaultJournalChanges = 1 << 16

type journalChange struct {
	rev  int64
	key  string
	prev *entry // the key's value before the change; nil where it had none
}

type journal struct {
	limit   int
	changes []journalChange // in revision order
	floor   int64           // the newest revision the bound dropped a change of
	base    map[string]int64
}

// note records a change of key at rev, whose value was prev.
func (j *journal) note(rev int64, key string, prev *entry) {
	if j.limit <= 0 {
		return
	}
	if len(j.changes) >= j.limit {
		drop := max(j.limit/4, 1)
		j.floor = max(j.floor, j.changes[drop-1].rev)
		j.changes = slices.Delete(j.changes, 0, drop)
	}
	j.changes = append(j.changes, journalChange{rev: rev, key: key, prev: prev})
}

// rebase says that the zone under prefix changed up to rev without the journal: it holds none
// of its changes up to rev.
func (j *journal) rebase(prefix string, rev int64) {
	if j.base == nil {
		j.base = map[string]int64{}
	}
	j.base[prefix] = max(j.base[prefix], rev)
}

// newest is the revision of the newest change held, 0 when none.
func (j *journal) newest() int64 {
	if len(j.changes) == 0 {
		return 0
	}
	return j.changes[len(j.changes)-1].rev
}

// since is the position of the first change after the revision that serial stands for, in the
// zone under prefix whose serial is now the revision rev: ok is false when the journal does not
// hold every change of the zone since then, or when serial is not before rev (RFC 1982).
func (j *journal) since(prefix string, rev int64, serial uint32) (int, bool) {
	from, ok := serialRevision(rev, serial)
	if !ok {
		return 0, false
	}
	return j.after(prefix, from)
}

// serialRevision is the revision that serial stands for in a zone whose serial is now the
// revision rev; ok is false when serial is not before rev (RFC 1982).
func serialRevision(rev int64, serial uint32) (int64, bool) {
	if !SerialAfter(uint32(rev), serial) { // #nosec G115 -- RFC 1982: the low 32 bits
		return 0, false
	}
	from := rev - int64(uint32(rev)-serial) // #nosec G115 -- as above
	return from, from >= 0
}

// after is the position of the first change after revision from: ok is false when the journal
// does not hold every change of the zone under prefix since from (start).
func (j *journal) after(prefix string, from int64) (int, bool) {
	if j.limit <= 0 || from < j.start(prefix) {
		return 0, false
	}
	return sort.Search(len(j.changes), func(i int) bool { return j.changes[i].rev > from }), true
}

// start is the revision since which the journal holds every change of the zone under prefix.
func (j *journal) start(prefix string) int64 { return max(j.floor, j.base[prefix]) }

// pastValues are the keys under dir ("/" at its end) changed from the position first on, each
// with the value it had before the first of its changes.
func (j *journal) pastValues(first int, dir string) map[string]*entry {
	past := map[string]*entry{}
	own := strings.TrimSuffix(dir, "/")
	for _, c := range j.changes[first:] {
		if c.key != own && !strings.HasPrefix(c.key, dir) {
			continue
		}
		if _, seen := past[c.key]; !seen {
			past[c.key] = c.prev
		}
	}
	return past
}
