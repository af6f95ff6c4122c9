package gatewaydns

import (
	"context"
	"slices"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/transfer"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
)

// Transfer implements transfer.Transferer, so that the stock transfer plugin serves AXFR and
// IXFR of the stanza's zones from the index: a copy of the zone's names taken in one short
// read lock (index.Zone), turned into records while the transfer is sent. An IXFR is answered
// with the SOA alone when the secondary is current, and with the whole zone otherwise, as
// RFC 1995 allows: the index keeps no history.
func (g *GatewayDNS) Transfer(zone string, serial uint32) (<-chan []dns.RR, error) {
	b := g.current()
	if b == nil || !slices.Contains(g.Zones, zone) {
		return nil, transfer.ErrNotAuthoritative
	}
	z, ok := b.Zone(zone)
	if !ok {
		return nil, errNotLoaded
	}
	opt := plugin.Options{NoApexFallback: g.NoApexFallback}
	soa, err := plugin.SOA(context.Background(), z, zone, request.Request{}, opt)
	if err != nil {
		return nil, err
	}
	zones := strings.Join(g.Zones, " ")
	ch := make(chan []dns.RR)
	if serial != 0 && !serialAfter(z.Serial(request.Request{}), serial) {
		transfers.WithLabelValues(zones, "current").Inc()
		go func() {
			defer close(ch)
			ch <- soa
		}()
		return ch, nil
	}
	transfers.WithLabelValues(zones, "full").Inc()
	// The transfer plugin reads the channel to its end, also when the secondary goes away.
	go func() {
		defer close(ch)
		ch <- soa
		reverse := dns.IsSubDomain("arpa.", zone)
		for name := range z.Names {
			if rrs := zoneRecords(z, name, reverse, opt); len(rrs) > 0 {
				ch <- rrs
			}
		}
		ch <- soa
	}()
	return ch, nil
}

// serialAfter reports whether serial a is after b in RFC 1982 arithmetic.
func serialAfter(a, b uint32) bool { return a != b && int32(a-b) > 0 } // #nosec G115 -- RFC 1982

// zoneQuestions are what a name's records in a transfer are made of: the answers to these
// questions, as the live plugin gives them (lookup), that are owned by the name itself. A
// CNAME, where a name has one, stands alone (RFC 1034 3.6.2).
var zoneQuestions = []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeSRV, dns.TypeMX}

// zoneRecords are the records of one name in a transfer of z: what the plugin answers for the
// name with exact names, without the records of other names (CNAME targets, glue), which the
// zone holds at their own names.
func zoneRecords(z *index.Zone, name string, reverse bool, opt plugin.Options) []dns.RR {
	ctx := context.Background()
	ask := func(qtype uint16) []dns.RR {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		records, _, _, err := lookup(ctx, z, z.Origin, request.Request{Req: m, Zone: z.Origin}, opt)
		if err != nil {
			return nil
		}
		own := records[:0]
		for _, rr := range records {
			if h := rr.Header(); h.Rrtype == qtype && strings.EqualFold(h.Name, name) {
				own = append(own, rr)
			}
		}
		return own
	}
	if reverse {
		return ask(dns.TypePTR)
	}
	var rrs []dns.RR
	if name != z.Origin {
		if cn := ask(dns.TypeCNAME); len(cn) > 0 {
			return cn[:1]
		}
	} else {
		rrs = append(rrs, ask(dns.TypeNS)...)
	}
	for _, qtype := range zoneQuestions {
		rrs = append(rrs, ask(qtype)...)
	}
	return rrs
}
