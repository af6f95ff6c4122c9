package index

import (
	"github.com/coredns/coredns/plugin/etcd/msg"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// An IXFR from before the journal. The journal holds the changes the index applied, since its
// load of the zone (a start, a reload that reads etcd again, a replica that has just taken
// over) or since its bound dropped older ones. A secondary whose serial is older than that
// still gets the difference where etcd's history covers the gap between its serial and the
// journal's start: the caller reads the values the keys changed in the gap had at the serial
// (package history), and ZoneDiffFrom takes them before the journal's.

// Gap is the span of etcd's history between the revision a secondary's serial stands for and
// the start of the journal of its zone: (From, To], under the zone's key prefix Dir (ending in
// "/").
type Gap struct {
	Dir      string
	From, To int64
}

// JournalGap is the Gap an IXFR of zone origin from serial must read from etcd's history; ok is
// false when the journal holds every change since serial (ZoneDiff), when serial is not before
// the zone's serial, or when the index keeps no journal.
func (ix *Index) JournalGap(origin string, serial uint32) (Gap, bool) {
	if !ix.Loaded() {
		return Gap{}, false
	}
	dir := msg.Path(origin, ix.opts.Prefix) + "/"
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	prefix := ix.zonePrefixOf(dir)
	then, ok := ix.epochAt(prefix, serial)
	if !ok {
		return Gap{}, false
	}
	from, ok := serialRevision(ix.serials[prefix], serial-then.off)
	start := ix.journal.start(prefix)
	if !ok || from >= start || ix.journal.limit <= 0 {
		return Gap{}, false
	}
	return Gap{Dir: dir, From: from, To: start}, true
}

// ZoneDiffFrom is ZoneDiff from before the journal: gap is JournalGap's for serial, and then
// the values the keys changed in it had at gap.From (nil: none), read from etcd's history. ok
// is false where the journal no longer holds every change since gap.To (a load since), or serial
// no longer stands for gap.From.
func (ix *Index) ZoneDiffFrom(origin string, serial uint32, apexNames []string, gap Gap, then map[string]*record.KV) (past, now *Zone, ok bool) {
	earlier := make(map[string]*entry, len(then))
	for key, kv := range then {
		var e *entry
		if kv != nil {
			e, _ = ix.decode(*kv) // a value that cannot be served was in no answer: none
		}
		earlier[key] = e
	}
	return ix.zoneDiff(origin, serial, apexNames, func(prefix, dir string, rev int64, revThen uint32) (map[string]*entry, bool) {
		if from, ok := serialRevision(rev, revThen); !ok || from != gap.From || dir != gap.Dir {
			return nil, false
		}
		first, ok := ix.journal.after(prefix, gap.To) // not ok after a load since JournalGap
		if !ok {
			return nil, false
		}
		values := ix.journal.pastValues(first, dir)
		for key, e := range earlier {
			values[key] = e // the value at the serial: before any the journal holds
		}
		return values, true
	})
}
