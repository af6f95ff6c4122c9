package index

import (
	"strings"
	"time"
)

// Serials of zones with health-checked names. A zone's serial is the etcd revision of its last
// change (serial.go), and a failover changes what the zone holds (the transfer holds the
// eligible owners of the best tier) without a change in etcd: so the serial of a zone whose
// names declare health checks is the revision plus an offset of its own, which grows with every
// change of the health of its addresses, and the zone copies of a transfer hold the view of
// their serial. A secondary follows by NOTIFY and IXFR: the IXFR from its serial is made from
// the journal's changes since the revision within it and the names whose addresses' health
// changed since the view of it (serialEpoch).
//
// The offset is a clock (seconds since steerClockEpoch) when the zone first holds a checked
// name in this process, and grows by at least one on every change after: so that a server that
// restarts, or a reload that reads etcd again, serves a later serial than any it served before,
// and its secondaries do not take the zone they hold for newer. A zone that never held a
// checked name keeps the revision itself as its serial, as the stock etcd plugin's.
//
// Two replicas following one etcd agree on the serial of such a zone only by chance: they run
// their own checks, and their views, like their offsets, are their own. A secondary follows one
// primary; one that moves to another replica transfers again when that one's serial is later.

// steerClockEpoch is where the offsets' clock starts: 2020-01-01T00:00:00Z.
const steerClockEpoch = 1577836800

// maxSerialEpochs is how many changes of a zone's offset are remembered for IXFR; an IXFR from
// an older one is the whole zone.
const maxSerialEpochs = 64

// serialEpoch is one offset of a zone's serial and the view it stands for, from the serial
// from on.
type serialEpoch struct {
	from uint32
	off  uint32
	view *healthView
}

// steerSerial is the offset of one zone's serial, and its recent epochs, oldest first.
type steerSerial struct {
	off    uint32
	epochs []serialEpoch
	// trimmed: epochs older than the first were dropped.
	trimmed bool
}

// serialOfLocked is the serial of the zone with the key prefix p: its revision's low 32 bits,
// plus its offset.
func (ix *Index) serialOfLocked(p string) uint32 {
	s := uint32(ix.serials[p]) // #nosec G115 -- RFC 1982 serial arithmetic wraps by design
	if ss := ix.steerSerials[p]; ss != nil {
		s += ss.off
	}
	return s
}

// steerClock is the offsets' clock at now.
func steerClock(now time.Time) uint32 {
	return uint32(now.Unix() - steerClockEpoch) // #nosec G115 -- 136 years
}

// zonesOf are the zone prefixes that hold the names (keys).
func (ix *Index) zonesOf(names []string) []string {
	var zones []string
	for _, p := range ix.opts.ZonePrefixes {
		for _, n := range names {
			if strings.HasPrefix(n+"/", p) {
				zones = append(zones, p)
				break
			}
		}
	}
	return zones
}

// moveSteerSerialsLocked moves the offsets of the zones holding names, in view v: by the clock
// for a zone without one yet, and with health true (the view changed) by at least one for the
// others.
func (ix *Index) moveSteerSerialsLocked(names []string, v *healthView, health bool) {
	now := steerClock(ix.opts.Now())
	for _, p := range ix.zonesOf(names) {
		ss := ix.steerSerials[p]
		if ss == nil {
			ss = &steerSerial{}
			ix.steerSerials[p] = ss
		}
		switch {
		case ss.off == 0:
			ss.off = max(now, 1)
		case health:
			ss.off = max(ss.off+1, now)
		default:
			continue
		}
		ss.epochs = append(ss.epochs, serialEpoch{from: ix.serialOfLocked(p), off: ss.off, view: v})
		if len(ss.epochs) > maxSerialEpochs {
			ss.epochs = ss.epochs[len(ss.epochs)-maxSerialEpochs:]
			ss.trimmed = true
		}
	}
}

// epochAt is the offset and view of the zone's serial s; ok is false when it is older than the
// epochs remembered. A serial before the first epoch is a revision (offset 0) of a zone
// without checked names, whose view does not matter: nothing is held down.
func (ix *Index) epochAt(p string, s uint32) (serialEpoch, bool) {
	if b, ok := ix.storeBarriers[p]; ok && !SerialAfter(s, b) {
		return serialEpoch{}, false // a serial of the store before (newstore.go)
	}
	ss := ix.steerSerials[p]
	if ss == nil {
		return serialEpoch{from: s}, true
	}
	for i := len(ss.epochs) - 1; i >= 0; i-- {
		if e := ss.epochs[i]; !SerialAfter(e.from, s) {
			return e, true
		}
	}
	return serialEpoch{from: s}, !ss.trimmed
}

// ZoneSerial is the SOA serial of the zone that serves name (a zone's origin): the revision of
// its last change, with the offset of a zone with health-checked names.
func (ix *Index) ZoneSerial(name string) uint32 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.serialOfLocked(ix.zonePrefixOfName(name))
}
