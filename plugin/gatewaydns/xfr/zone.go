package xfr

import (
	"context"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// zoneWriter makes the records of the names of a zone being transferred: the zone as a person
// would write it (published), or with transfer-synthetic what the plugin answers for each name
// (synthetic), SRV records of every address and record-id names included.
type zoneWriter struct {
	z         *index.Zone
	apex      *answer.Apex
	reverse   bool
	synthetic bool
	opt       plugin.Options
	glued     map[string]bool // record-id names whose addresses were sent as some record's target
}

func newZoneWriter(z *index.Zone, a *answer.Apex, reverse, synthetic bool, opt plugin.Options) *zoneWriter {
	return &zoneWriter{z: z, apex: a, reverse: reverse, synthetic: synthetic, opt: opt}
}

// appendName appends the records of the zone's i-th name to dst, one TTL per RRset
// (oneTTLPerRRset). A plain name's
// (index.Zone.Plain, nearly every name) are made from its addresses and services by the code
// that answers questions (answer.AppendAddressRecords), without the lookups the other names
// take.
func (x *zoneWriter) appendName(dst []dns.RR, i int) []dns.RR {
	start := len(dst)
	dst = x.appendNameRecords(dst, i)
	oneTTLPerRRset(dst[start:])
	return dst
}

// appendNameRecords is appendName before the TTLs are made one per RRset.
func (x *zoneWriter) appendNameRecords(dst []dns.RR, i int) []dns.RR {
	name := x.z.Name(i)
	if x.reverse || x.synthetic {
		if name == x.z.Origin || x.reverse {
			return append(dst, zoneRecords(x.z, x.apex, name, x.reverse, x.opt)...)
		}
		return x.appendPlain(dst, i, name, true)
	}
	if name == x.z.Origin {
		return x.appendApex(dst, name)
	}
	if x.storage(i, name) {
		return dst // its records are its parent's or the apex's; its addresses go where a record targets it
	}
	return x.appendPlain(dst, i, name, false)
}

// appendPlain appends the records of a plain name, or of any other name by the slow path:
// its A and AAAA records, as the handler answers them, and with synthetic the SRV records
// plugin.SRV would make of its services, one per address. Published, a plain name with a port
// takes the slow path, which makes its SRV records (their targets' addresses included).
func (x *zoneWriter) appendPlain(dst []dns.RR, i int, name string, synthetic bool) []dns.RR {
	services, v4, v6, ok := x.z.Plain(i)
	if ok && !synthetic {
		for _, s := range services {
			if s.Port > 0 {
				ok = false
			}
		}
	}
	if !ok {
		if synthetic {
			return append(dst, zoneRecords(x.z, x.apex, name, false, x.opt)...)
		}
		return x.appendPublished(dst, name)
	}
	if len(services) == 0 {
		return dst // an empty non-terminal
	}
	dst = answer.AppendAddressRecords(dst, name, dns.TypeA, v4)
	dst = answer.AppendAddressRecords(dst, name, dns.TypeAAAA, v6)
	if synthetic {
		return appendPlainSRV(dst, name, services)
	}
	return dst
}

// appendApex appends the apex's records: its NS records (answer.Apex.NS) with the glue of those in
// the zone that no name of the zone holds, and its own published records. The SOA is the
// transfer's first and last record.
func (x *zoneWriter) appendApex(dst []dns.RR, name string) []dns.RR {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeNS)
	ns, glue, err := x.apex.NS(context.Background(), x.z, name, request.Request{Req: m, Zone: name}, x.opt)
	if err == nil {
		dst = append(dst, ns...)
		for _, rr := range glue {
			dst = x.appendGlue(dst, rr)
		}
	}
	dst = append(dst, x.apex.ZoneGlue(name)...)
	// The apex's own records, as published, from where the primary answers them
	// (answer.ApexServices: apex.dns.<zone> and the apex's key). Never a CNAME: the apex
	// holds the SOA and NS records, and a CNAME stands alone (RFC 1034 3.6.2).
	return x.appendServices(dst, name, func(qtype uint16) []msg.Service {
		m.SetQuestion(name, qtype)
		sx, err := answer.ApexServices(context.Background(), x.z, name, request.Request{Req: m, Zone: name}, x.opt)
		if err != nil {
			return nil
		}
		return sx
	}, false)
}

// storage tells whether the zone's i-th name is where records are stored rather than a name
// of the zone: a record id (index.Zone.RecordID), whose records are its parent's, or a name of
// ns.dns.<zone> and apex.dns.<zone>, the keys the NS records and the apex's records are read
// from (answer.Apex.NS, plugin.A). Such a name is in a transfer only as a record's target.
func (x *zoneWriter) storage(i int, name string) bool {
	if x.z.RecordID(i) {
		return true
	}
	for _, dir := range [...]string{"ns.dns.", "apex.dns."} {
		if d := dir + x.z.Origin; name == d || strings.HasSuffix(name, "."+d) {
			return true
		}
	}
	return false
}

// appendGlue appends rr, an address of a record's target, when the target is a storage name,
// which the transfer holds only that way, once.
func (x *zoneWriter) appendGlue(dst []dns.RR, rr dns.RR) []dns.RR {
	target := rr.Header().Name
	i, ok := x.z.Position(target)
	if !ok || !x.storage(i, target) {
		return dst // a name of the zone, sent with its own records; or none of the zone's
	}
	if x.glued == nil {
		x.glued = map[string]bool{}
	}
	if k := rr.String(); !x.glued[k] {
		x.glued[k] = true
		dst = append(dst, rr)
	}
	return dst
}

// appendPublished appends the records of name as they were published: an address is an A or
// AAAA record, text a TXT record, a value with a port an SRV record with that port, one with
// mail an MX record, and a host name without either a CNAME, which stands alone (RFC 1034
// 3.6.2) and is left out beside other data. The values are those the name's questions read
// (the CNAME rule and groups applied), with exact names.
func (x *zoneWriter) appendPublished(dst []dns.RR, name string) []dns.RR {
	return x.appendServices(dst, name, func(qtype uint16) []msg.Service {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		sx, err := x.z.Services(context.Background(), request.Request{Req: m, Zone: x.z.Origin}, false, x.opt)
		if err != nil {
			return nil
		}
		return sx
	}, !x.apex.Glued(name))
}

// appendServices appends the records of name made of the services each question reads
// (ask): appendPublished's rules, a CNAME only where cname allows one.
func (x *zoneWriter) appendServices(dst []dns.RR, name string, ask func(qtype uint16) []msg.Service, cname bool) []dns.RR {
	start := len(dst)
	var alias dns.RR
	for _, s := range ask(dns.TypeA) {
		switch what, ip := s.HostType(); {
		case what == dns.TypeA:
			dst = append(dst, s.NewA(name, ip))
		case what == dns.TypeAAAA:
			dst = append(dst, s.NewAAAA(name, ip))
		case what == dns.TypeCNAME && s.Port <= 0 && !s.Mail && alias == nil:
			alias = s.NewCNAME(name, s.Host)
		}
	}
	for _, s := range ask(dns.TypeTXT) {
		if s.Text != "" {
			dst = append(dst, s.NewTXT(name))
		}
	}
	dst = x.appendSRV(dst, name, ask(dns.TypeSRV))
	dst = x.appendMX(dst, name, ask(dns.TypeMX))
	if len(dst) == start && alias != nil && cname {
		dst = append(dst, alias)
	}
	return dst
}

// appendSRV appends the SRV records of the services with a port, weights shared out per
// priority as plugin.SRV does, a target and port once. An address's target is its key's
// name, whose address goes with it (appendGlue).
func (x *zoneWriter) appendSRV(dst []dns.RR, name string, services []msg.Service) []dns.RR {
	weights := srvWeightsOf(services, func(s msg.Service) bool { return s.Port > 0 })
	type targetPort struct {
		target string
		port   int
	}
	seen := map[targetPort]bool{}
	for _, s := range services {
		if s.Port <= 0 {
			continue
		}
		srv := s.NewSRV(name, weights.of(s))
		what, ip := s.HostType()
		if what == dns.TypeA || what == dns.TypeAAAA {
			srv.Target = record.TargetName(s.Key, s.TargetStrip)
		}
		srv.Target = strings.ToLower(srv.Target)
		if k := (targetPort{srv.Target, s.Port}); seen[k] {
			continue
		} else {
			seen[k] = true
		}
		dst = append(dst, srv)
		if ip != nil {
			dst = x.appendGlue(dst, answer.AddressRR(srv.Target, s.TTL, ip))
		}
	}
	return dst
}

// appendMX appends the MX records of the services with mail, an exchange once; an address's
// exchange is its key's name, as plugin.MX makes it, whose address goes with it.
func (x *zoneWriter) appendMX(dst []dns.RR, name string, services []msg.Service) []dns.RR {
	seen := map[string]bool{}
	for _, s := range services {
		if !s.Mail {
			continue
		}
		mx := s.NewMX(name)
		what, ip := s.HostType()
		if what == dns.TypeA || what == dns.TypeAAAA {
			mx.Mx = record.TargetName(s.Key, s.TargetStrip)
		}
		mx.Mx = strings.ToLower(mx.Mx)
		if seen[mx.Mx] {
			continue
		}
		seen[mx.Mx] = true
		dst = append(dst, mx)
		if ip != nil {
			dst = x.appendGlue(dst, answer.AddressRR(mx.Mx, s.TTL, ip))
		}
	}
	return dst
}

// zoneQuestions are what a name's records in a synthetic transfer are made of: the answers to
// these questions, as the live plugin gives them (answer.Lookup), that are owned by the name itself. A
// CNAME, where a name has one, stands alone (RFC 1034 3.6.2).
var zoneQuestions = []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeSRV, dns.TypeMX}

// zoneRecords are the records of one name in a synthetic transfer of z: what the plugin
// answers for the name with exact names, without the records of other names (CNAME targets,
// glue), which the zone holds at their own names.
func zoneRecords(z *index.Zone, a *answer.Apex, name string, reverse bool, opt plugin.Options) []dns.RR {
	ctx := context.Background()
	ask := func(qtype uint16) []dns.RR {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		records, _, _, err := answer.LookupBackend(ctx, z, a, z.Origin, request.Request{Req: m, Zone: z.Origin}, opt)
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
	if name != z.Origin && !a.Glued(name) {
		if cn := ask(dns.TypeCNAME); len(cn) > 0 {
			return cn[:1]
		}
	} else {
		rrs = append(rrs, ask(dns.TypeNS)...)
		rrs = append(rrs, a.ZoneGlue(name)...)
	}
	for _, qtype := range zoneQuestions {
		rrs = append(rrs, ask(qtype)...)
	}
	return rrs
}

// oneTTLPerRRset gives the records of each RRset in rrs the lowest TTL among them. The keys of
// one name may carry different TTLs, and an RRset has one (RFC 2181 5.2): Knot warns of each
// ("TTL mismatch") and keeps one of its own choosing, BIND the first; the lowest holds no
// record in a cache longer than its key asks. The primary's own answers keep each key's TTL,
// as the etcd plugin's do.
func oneTTLPerRRset(rrs []dns.RR) {
	if uniformTTL(rrs) {
		return // nearly every name: no map to make on the transfer's path
	}
	type rrset struct {
		name   string
		rrtype uint16
	}
	lowest := make(map[rrset]uint32, 4)
	for _, rr := range rrs {
		h := rr.Header()
		k := rrset{h.Name, h.Rrtype}
		if ttl, ok := lowest[k]; !ok || h.Ttl < ttl {
			lowest[k] = h.Ttl
		}
	}
	for _, rr := range rrs {
		h := rr.Header()
		h.Ttl = lowest[rrset{h.Name, h.Rrtype}]
	}
}

// uniformTTL tells whether every record of rrs has the same TTL.
func uniformTTL(rrs []dns.RR) bool {
	for i := 1; i < len(rrs); i++ {
		if rrs[i].Header().Ttl != rrs[0].Header().Ttl {
			return false
		}
	}
	return true
}
