// Package answer holds the rules of an answer in one place: which records answer a question
// (Lookup: per type, address records, CNAME answering and following, as the stock etcd plugin
// finds them) and what the apex holds (Apex: the SOA, the NS records and their glue). The
// handler answers questions with it, and the zone transfers (package xfr) make each name's
// records with it, so that a secondary holds what the primary answers. The Corefile's soa and
// nameserver options are read by the plugin's setup, into an Apex.
package answer

import (
	"context"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
)

// Indexed is the live index (index.Index) as the handler answers from it: it holds the
// addresses of each name worked out when its records last changed, and gives those of the
// owners chosen for the asker of a steered name (index.Index.AppendAnswer), and says whether it
// answers with exact names. A zone being transferred (index.Zone) is not one: its lookups take
// the stock plugin's way.
type Indexed interface {
	AppendAsked(ctx context.Context, dst []index.Address, state request.Request, qtype uint16) (addrs []index.Address, ok bool, err error)
	ExactNames() bool
}

// Lookup finds the records that answer the question, as the stock etcd plugin finds them, with
// the SOA and NS records of the stanza's apex (apex.go). b is the live index (Indexed), or a
// zone being transferred (index.Zone).
func Lookup(ctx context.Context, b plugin.ServiceBackend, a *Apex, zone string, state request.Request, opt plugin.Options) (records, extra []dns.RR, truncated bool, err error) {
	qtype := state.QType()
	if glue := a.Glue(state.Name(), qtype); len(glue) > 0 {
		// A nameserver's glue, beside the addresses the name has in etcd: what a secondary
		// holds. Not beside a CNAME, nor what it leads to (Apex.Glued).
		records, extra, truncated, err = LookupBackend(ctx, b, a, zone, state, opt)
		if err != nil && !b.IsNameError(err) {
			return nil, nil, false, err
		}
		own := glue
		for _, rr := range records {
			if h := rr.Header(); h.Rrtype == qtype && h.Name == state.QName() {
				own = append(own, rr)
			}
		}
		return own, extra, truncated, nil
	}
	return LookupBackend(ctx, b, a, zone, state, opt)
}

// LookupBackend is Lookup without the nameservers' glue: the records the backend holds for the
// question, and the apex's SOA and NS records.
func LookupBackend(ctx context.Context, b plugin.ServiceBackend, a *Apex, zone string, state request.Request, opt plugin.Options) (records, extra []dns.RR, truncated bool, err error) {
	qtype := state.QType()
	if exactApex(b, zone, state) {
		b = apexRecords{ServiceBackend: b, zone: zone} // apexrecords.go
	}
	switch qtype {
	case dns.TypeA, dns.TypeAAAA:
		if live, ok := b.(Indexed); ok && state.Name() != zone {
			if records, ok, err := addressRecords(ctx, live, state, qtype); ok {
				return records, nil, false, err
			}
		}
		if qtype == dns.TypeAAAA {
			records, truncated, err = plugin.AAAA(ctx, b, zone, state, nil, opt)
			break
		}
		records, truncated, err = plugin.A(ctx, b, zone, state, nil, opt)
	case dns.TypeTXT:
		records, truncated, err = plugin.TXT(ctx, b, zone, state, nil, opt)
	case dns.TypeCNAME:
		records, err = cname(ctx, b, zone, state, opt)
	case dns.TypePTR:
		records, err = plugin.PTR(ctx, b, zone, state, opt)
	case dns.TypeMX:
		records, extra, err = plugin.MX(ctx, b, zone, state, opt)
	case dns.TypeSRV:
		records, extra, err = plugin.SRV(ctx, b, zone, state, opt)
	case dns.TypeSOA:
		// The etcd plugin answers the zone's SOA to an SOA question for any name; a plain zone
		// only at its apex, and NODATA or NXDOMAIN below it, as exact names do.
		if live, ok := b.(Indexed); !ok || !live.ExactNames() || state.Name() == zone {
			records = []dns.RR{a.SOA(b, zone, state)}
			break
		}
		_, _, err = plugin.A(ctx, b, zone, state, nil, opt)
	case dns.TypeNS:
		if state.Name() == zone {
			records, extra, err = a.NS(ctx, b, zone, state, opt)
			break
		}
		fallthrough
	default:
		// An A lookup tells NODATA from NXDOMAIN for the types we hold no data of.
		_, _, err = plugin.A(ctx, b, zone, state, nil, opt)
	}
	return records, extra, truncated, err
}

// addressRecords is plugin.A's or plugin.AAAA's answer for names whose records are addresses
// alone, from what the index worked out when the records last changed rather than per question:
// the bulk of the questions, at a fraction of the cost. ok is false for the other names.
func addressRecords(ctx context.Context, ix Indexed, state request.Request, qtype uint16) (records []dns.RR, ok bool, err error) {
	// Most names have fewer: then finding them allocates nothing. More would make the query
	// path's frames grow the goroutine's stack once more per question (issue 37).
	var buf [4]index.Address
	addrs, ok, err := ix.AppendAsked(ctx, buf[:0], state, qtype)
	if !ok || err != nil {
		return nil, ok, err
	}
	return AppendAddressRecords(make([]dns.RR, 0, len(addrs)), state.QName(), qtype, addrs), true, nil
}

// AppendAddressRecords appends the A (qtype A) or AAAA records of name for addrs: how both
// answers (addressRecords) and zone transfers (package xfr) make them.
func AppendAddressRecords(dst []dns.RR, name string, qtype uint16, addrs []index.Address) []dns.RR {
	hdr := dns.RR_Header{Name: name, Rrtype: qtype, Class: dns.ClassINET}
	for _, a := range addrs {
		hdr.Ttl = a.TTL
		if qtype == dns.TypeA {
			dst = append(dst, &dns.A{Hdr: hdr, A: a.IP})
		} else {
			dst = append(dst, &dns.AAAA{Hdr: hdr, AAAA: a.IP})
		}
	}
	return dst
}

// cname answers a CNAME question. A record at the name's own key answers as in the stock
// plugin. Records one level down (".../app/3e6bee2e", the layout external-dns and gatewaydns
// write) give the CNAMEs that an A question for the name returns, where the stock plugin says
// NXDOMAIN although it answers the A question with that very CNAME.
func cname(ctx context.Context, b plugin.ServiceBackend, zone string, state request.Request, opt plugin.Options) ([]dns.RR, error) {
	records, err := plugin.CNAME(ctx, b, zone, state, opt)
	if err == nil || !b.IsNameError(err) {
		return records, err
	}
	services, err := b.Services(ctx, state, false, opt)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, s := range services {
		if what, _ := s.HostType(); what != dns.TypeCNAME {
			continue
		}
		target := dns.Fqdn(s.Host)
		if plugin.Name(state.Name()).Matches(target) || seen[target] {
			continue // a loop, as plugin.A skips it; or a target already given
		}
		seen[target] = true
		records = append(records, s.NewCNAME(state.QName(), target))
	}
	return records, nil
}

var _ Indexed = (*index.Index)(nil)

// BackendError writes plugin.BackendError's reply, with the stanza's SOA (a's): a negative
// answer (rcode NXDOMAIN, or NOERROR for NODATA) or a SERVFAIL, authoritative.
func BackendError(b plugin.ServiceBackend, a *Apex, zone string, rcode int, state request.Request, err error) (int, error) {
	m := new(dns.Msg)
	m.SetRcode(state.Req, rcode)
	m.Authoritative = true
	m.Ns = []dns.RR{a.SOA(b, zone, state)}
	state.W.WriteMsg(m)
	return dns.RcodeSuccess, err
}
