// Package catalog makes the catalog zone (RFC 9432) of a stanza's zones: a zone whose records
// list the zones a primary serves, so that a secondary that reads catalogs (BIND 9.18, Knot
// 3.2, PowerDNS 4.7) provisions a member zone when it appears in the catalog and removes it when
// it leaves, with no configuration of its own per zone. The catalog's members are the zones of
// the Corefile's stanza, so they change only with the Corefile: the catalog is made at setup,
// and a reload that changes the zones makes a new one with a newer serial.
package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// The catalog's SOA, NS and TTL, as RFC 9432 shows them: nobody resolves a catalog, so its NS is
// "invalid." and its records live for no time in a cache; a secondary refreshes it hourly
// without a NOTIFY, and keeps it for as long as it can (expire).
const (
	ttl     = 0
	refresh = 3600
	retry   = 600
	expire  = 2147483646
	invalid = "invalid."
)

// Zone is one catalog: its name, its members and its serial.
type Zone struct {
	Name    string   // the catalog's name, a lower-cased FQDN
	Members []string // the member zones, lower-cased FQDNs, sorted
	Serial  uint32
	records []dns.RR // in transfer order, the SOA first
	byName  map[string][]dns.RR
}

// New is the catalog name listing members, at a serial after that of any other catalog this
// process made (nextSerial).
func New(name string, members []string) *Zone {
	z := &Zone{Name: dns.CanonicalName(name), Serial: nextSerial(time.Now()), byName: map[string][]dns.RR{}}
	for _, m := range members {
		z.Members = append(z.Members, dns.CanonicalName(m))
	}
	slices.Sort(z.Members)
	z.Members = slices.Compact(z.Members)
	z.add(&dns.SOA{Hdr: z.hdr(z.Name, dns.TypeSOA), Ns: invalid, Mbox: invalid, Serial: z.Serial,
		Refresh: refresh, Retry: retry, Expire: expire, Minttl: ttl})
	z.add(&dns.NS{Hdr: z.hdr(z.Name, dns.TypeNS), Ns: invalid})
	z.add(&dns.TXT{Hdr: z.hdr("version."+z.Name, dns.TypeTXT), Txt: []string{"2"}})
	for _, m := range z.Members {
		z.add(&dns.PTR{Hdr: z.hdr(memberID(m)+".zones."+z.Name, dns.TypePTR), Ptr: m})
	}
	return z
}

func (z *Zone) hdr(name string, rrtype uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: rrtype, Class: dns.ClassINET, Ttl: ttl}
}

func (z *Zone) add(rr dns.RR) {
	z.records = append(z.records, rr)
	name := rr.Header().Name
	z.byName[name] = append(z.byName[name], rr)
}

// memberID is the unique label of a member (RFC 9432 4.3.1): a hash of its name, so that every
// replica and every reload gives a member the same one, and a secondary sees a member that stays
// as the same member.
func memberID(member string) string {
	sum := sha256.Sum256([]byte(member))
	return hex.EncodeToString(sum[:8])
}

// lastSerial is the newest serial a catalog of this process has: a reload within the second of
// the last one still makes a newer catalog, so that its secondaries take it.
var lastSerial atomic.Uint32

// nextSerial is the time now in seconds since 1970 (32 bits, as RFC 1982 compares them), or one
// after the last catalog's when that is not before it.
func nextSerial(now time.Time) uint32 {
	for {
		last := lastSerial.Load()
		s := uint32(now.Unix())              // #nosec G115 -- RFC 1982: the low 32 bits
		if int32(s-last) <= 0 && last != 0 { // #nosec G115 -- RFC 1982
			s = last + 1
		}
		if lastSerial.CompareAndSwap(last, s) {
			return s
		}
	}
}

// SOA is the catalog's SOA record.
func (z *Zone) SOA() dns.RR { return z.records[0] }

// Records are the catalog's records in transfer order, the SOA first (and not again at the end).
func (z *Zone) Records() []dns.RR { return z.records }

// Holds tells whether name (lower case) is the catalog's or below it.
func (z *Zone) Holds(name string) bool { return dns.IsSubDomain(z.Name, name) }

// Reply is the authoritative answer to the question of r, a name the catalog holds: its
// records of the type asked, else NODATA (a name with records, or one with names below it) or
// NXDOMAIN, with the SOA.
func (z *Zone) Reply(r *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	q := r.Question[0]
	name := dns.CanonicalName(q.Name)
	for _, rr := range z.byName[name] {
		if q.Qtype == dns.TypeANY || rr.Header().Rrtype == q.Qtype {
			m.Answer = append(m.Answer, rr)
		}
	}
	if len(m.Answer) > 0 {
		return m
	}
	m.Ns = []dns.RR{z.SOA()}
	if !z.exists(name) {
		m.Rcode = dns.RcodeNameError
	}
	return m
}

// exists tells whether the catalog has name: records at it, or below it.
func (z *Zone) exists(name string) bool {
	for owner := range z.byName {
		if dns.IsSubDomain(name, owner) {
			return true
		}
	}
	return false
}
