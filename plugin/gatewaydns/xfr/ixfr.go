package xfr

import (
	"slices"
	"strings"

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
// A synthetic transfer (transfer-synthetic) is always whole: it holds what the plugin answers,
// and a CNAME's answer there follows its target, a name the change may not have touched.

// incremental is the difference of zone since serial, ok false when the whole zone is due.
func (t *Transfers) incremental(b Records, zone string, serial uint32) (past, now *index.Zone, ok bool) {
	if t.cfg.Synthetic {
		return nil, nil, false
	}
	return b.ZoneDiff(zone, serial, t.st.Apex.ZoneNames(zone))
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
