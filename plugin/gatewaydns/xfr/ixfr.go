package xfr

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
)

// True IXFR (RFC 1995). The index keeps a journal of the changes it applied (index/journal.go),
// and gives, for a secondary's serial, the names those changes touched as they were at that
// serial and as they are now (index.Index.ZoneDiff). Both are made into records by the code
// that makes a full transfer's, so the difference is exactly what the secondary's copy lacks
// or holds too much: a handful of records for a change of one, whatever the zone's size.
//
// The journal begins at the index's load of the zone: a restart, a rollout, a replica that
// takes over. A secondary whose serial is older than that still gets the difference: the
// values the keys changed in between had at its serial are read from etcd's history (package
// history, bounded in revisions and keys), counted as kind "history". Only a serial etcd has
// compacted away, or further back than those bounds, gets the whole zone.
//
// A synthetic transfer (transfer-synthetic) is always whole: it holds what the plugin answers,
// and a CNAME's answer there follows its target, a name the change may not have touched.

// incremental is the difference of zone since serial, and its kind ("incremental" from the
// journal, "history" with etcd's history before it); kind is "" when the whole zone is due.
// ctx ends a read of etcd's history (the stanza's stop).
func (t *Transfers) incremental(ctx context.Context, b Records, zone string, serial uint32) (past, now *index.Zone, kind string) {
	if t.cfg.Synthetic {
		return nil, nil, ""
	}
	apexNames := t.st.Apex.ZoneNames(zone)
	if past, now, ok := b.ZoneDiff(zone, serial, apexNames); ok {
		return past, now, "incremental"
	}
	gap, ok := b.JournalGap(zone, serial)
	h := b.History()
	if !ok || h == nil {
		return nil, nil, ""
	}
	start := time.Now()
	then, err := h.Past(ctx, gap.Dir, gap.From, gap.To)
	if err != nil {
		log.Infof("IXFR of %s from serial %d: the whole zone, etcd's history since it was not read: %v", zone, serial, err)
		return nil, nil, ""
	}
	if past, now, ok = b.ZoneDiffFrom(zone, serial, apexNames, gap, then); !ok {
		return nil, nil, ""
	}
	log.Infof("IXFR of %s from serial %d, before the journal: %d keys changed up to revision %d, read from etcd's history in %s",
		zone, serial, len(then), gap.To, time.Since(start).Round(time.Millisecond))
	return past, now, "history"
}

// sendIncremental sends the IXFR from serial: the new SOA, the SOA at serial, the records
// deleted, the new SOA, the records added, the new SOA.
func (t *Transfers) sendIncremental(x *xfrRun, zone string, serial uint32, past, now *index.Zone) {
	soa := t.st.Apex.SOA(now, zone, request.Request{})
	oldSOA := dns.Copy(soa).(*dns.SOA)
	oldSOA.Serial = serial
	reverse := dns.IsSubDomain("arpa.", zone)
	deleted, added := condensedDiff(t.zoneRRs(past, reverse), t.zoneRRs(now, reverse))
	for _, part := range [][]dns.RR{{soa, oldSOA}, deleted, {soa}, added, {soa}} {
		for len(part) > 0 {
			n := min(len(part), xfrBatch)
			if !x.send(part[:n]) {
				return
			}
			part = part[n:]
		}
	}
}

// zoneRRs are the records of the names of z, as a full transfer makes them, by their text.
func (t *Transfers) zoneRRs(z *index.Zone, reverse bool) map[string]dns.RR {
	w := newZoneWriter(z, t.st.Apex, reverse, false, t.st.Options)
	rrs := map[string]dns.RR{}
	var buf []dns.RR
	for i := range z.Len() {
		buf = w.appendName(buf[:0], i)
		for _, rr := range buf {
			rrs[rr.String()] = rr
		}
	}
	return rrs
}

// condensedDiff is what an IXFR from old to cur sends between the SOAs (RFC 1995 4): the
// records of old that cur lacks, and those of cur that old lacks, each once (a record sent
// twice in a transfer stays one record in the zone).
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
	byText := func(a, b dns.RR) int { return strings.Compare(a.String(), b.String()) }
	slices.SortFunc(deleted, byText)
	slices.SortFunc(added, byText)
	return deleted, added
}
