// Package dnscheck holds checks of DNS answers that tests of several packages share.
package dnscheck

import (
	"fmt"
	"strings"

	"github.com/miekg/dns"
)

// CNAMEBesideOtherData reports whether an owner name in rrs has a CNAME and any other record,
// a second CNAME included: what RFC 1034 3.6.2 forbids.
func CNAMEBesideOtherData(rrs []dns.RR) bool {
	cnames, all := map[string]int{}, map[string]int{}
	for _, rr := range rrs {
		owner := strings.ToLower(rr.Header().Name)
		all[owner]++
		if rr.Header().Rrtype == dns.TypeCNAME {
			cnames[owner]++
		}
	}
	for owner := range cnames {
		if all[owner] > 1 {
			return true
		}
	}
	return false
}

// CompleteTransfer returns an error unless rrs is a whole zone transfer of zone: the zone's SOA
// first and last, the same record both times, and no other SOA in between (RFC 5936 2.2). A
// transfer cut short, refused or of another zone fails it.
func CompleteTransfer(zone string, rrs []dns.RR) error {
	zone = dns.Fqdn(strings.ToLower(zone))
	if len(rrs) < 2 {
		return fmt.Errorf("transfer of %s: %d records, want at least the opening and closing SOA", zone, len(rrs))
	}
	first, ok := rrs[0].(*dns.SOA)
	if !ok || strings.ToLower(first.Hdr.Name) != zone {
		return fmt.Errorf("transfer of %s starts with %s, want the zone's SOA", zone, rrs[0])
	}
	last, ok := rrs[len(rrs)-1].(*dns.SOA)
	if !ok || !dns.IsDuplicate(first, last) || first.Hdr.Ttl != last.Hdr.Ttl {
		return fmt.Errorf("transfer of %s ends with %s, want the opening SOA %s again", zone, rrs[len(rrs)-1], first)
	}
	for _, rr := range rrs[1 : len(rrs)-1] {
		if rr.Header().Rrtype == dns.TypeSOA {
			return fmt.Errorf("transfer of %s holds a SOA inside it: %s", zone, rr)
		}
	}
	return nil
}

// Transfer takes the whole zone from addr by AXFR over TCP, each read bounded by the
// miekg/dns transfer's timeouts (2 s by default), and returns its records as received.
func Transfer(addr, zone string) ([]dns.RR, error) {
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(zone))
	ch, err := (&dns.Transfer{}).In(m, addr)
	if err != nil {
		return nil, fmt.Errorf("AXFR %s from %s: %w", zone, addr, err)
	}
	var rrs []dns.RR
	for env := range ch {
		if env.Error != nil {
			return rrs, fmt.Errorf("AXFR %s from %s: %w", zone, addr, env.Error)
		}
		rrs = append(rrs, env.RR...)
	}
	return rrs, nil
}
