// Package dnscheck holds checks of DNS answers that tests of several packages share.
package dnscheck

import (
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
