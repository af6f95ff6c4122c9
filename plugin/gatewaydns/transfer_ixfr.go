package gatewaydns

import (
	"slices"
	"sync"

	"github.com/miekg/dns"
)

// True IXFR (RFC 1995). The index keeps no history, so the stanza keeps, per zone, the records
// of the last few transfers it sent (xfrJournal): a secondary asks for an IXFR from the serial
// of the last transfer it took, which was one of them, and gets the condensed difference
// between those records and the zone now (the records deleted, then those added, between the
// SOAs of the two serials), a handful of records for a change of one, where it got the whole
// zone before. From a serial the journal does not hold (older than its bound, before a reload
// or a restart, from another replica) the answer is the whole zone, as RFC 1995 allows.
//
// The bound: xfrSnapshots transfers per zone, of zones of at most xfrSnapshotNames names. A
// larger zone keeps none, so that a million names is not held twice; its IXFRs are whole zones.
const (
	xfrSnapshots      = 3
	xfrSnapshotNames  = 100_000
	xfrSnapshotRecord = 4 // records per name a snapshot's map is sized for
)

// xfrSnapshot is the records of one transfer of a zone, keyed by their text (a TTL that
// changed is a record deleted and one added). Never changed once stored.
type xfrSnapshot struct {
	serial uint32
	rrs    map[string]dns.RR
}

// xfrJournal holds the snapshots of a stanza's zones, newest last.
type xfrJournal struct {
	mu    sync.Mutex
	zones map[string][]*xfrSnapshot
}

// get is the snapshot of zone at serial, nil if the journal holds none.
func (j *xfrJournal) get(zone string, serial uint32) *xfrSnapshot {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, s := range j.zones[zone] {
		if s.serial == serial {
			return s
		}
	}
	return nil
}

// put stores s as zone's newest snapshot, and drops the oldest past xfrSnapshots.
func (j *xfrJournal) put(zone string, s *xfrSnapshot) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.zones == nil {
		j.zones = map[string][]*xfrSnapshot{}
	}
	snaps := slices.DeleteFunc(j.zones[zone], func(o *xfrSnapshot) bool { return o.serial == s.serial })
	snaps = append(snaps, s)
	if len(snaps) > xfrSnapshots {
		snaps = slices.Delete(snaps, 0, len(snaps)-xfrSnapshots)
	}
	j.zones[zone] = snaps
}

// snapshotter collects the records of a transfer into a snapshot, for a zone small enough.
type snapshotter struct {
	s *xfrSnapshot // nil: not collected
}

func newSnapshotter(serial uint32, names int) *snapshotter {
	if names > xfrSnapshotNames {
		return &snapshotter{}
	}
	return &snapshotter{s: &xfrSnapshot{serial: serial, rrs: make(map[string]dns.RR, names*xfrSnapshotRecord)}}
}

func (c *snapshotter) add(rrs []dns.RR) {
	if c.s == nil {
		return
	}
	for _, rr := range rrs {
		c.s.rrs[rr.String()] = rr
	}
}

// condensedDiff is what an IXFR from old to cur sends between the SOAs (RFC 1995 4): the
// records of old that cur lacks, and those of cur that old lacks, each once (a record sent
// twice in a transfer stays one record in the zone, and is one in the snapshots).
func condensedDiff(old, cur map[string]dns.RR) (deleted, added []dns.RR) {
	for k, rr := range old {
		if _, ok := cur[k]; !ok {
			deleted = append(deleted, rr)
		}
	}
	for k, rr := range cur {
		if _, ok := old[k]; !ok {
			added = append(added, rr)
		}
	}
	// In a stable order: the secondary's log and a test read the same transfer twice alike.
	byText := func(a, b dns.RR) int {
		if a.String() < b.String() {
			return -1
		}
		return 1
	}
	slices.SortFunc(deleted, byText)
	slices.SortFunc(added, byText)
	return deleted, added
}

// sendIncremental sends the IXFR from old: the new SOA, old's SOA, the records deleted, the new
// SOA, the records added, the new SOA. cur is the zone now, collected without sending.
func (x *xfrRun) sendIncremental(soa *dns.SOA, old, cur *xfrSnapshot, pause func()) {
	oldSOA := dns.Copy(soa).(*dns.SOA)
	oldSOA.Serial = old.serial
	deleted, added := condensedDiff(old.rrs, cur.rrs)
	for _, part := range [][]dns.RR{{soa, oldSOA}, deleted, {soa}, added, {soa}} {
		for len(part) > 0 {
			n := min(len(part), xfrBatch)
			if !x.send(part[:n]) {
				return
			}
			part = part[n:]
			pause()
		}
	}
}
