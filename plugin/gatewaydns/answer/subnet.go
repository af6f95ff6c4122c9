package answer

import (
	"context"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/steer"
)

// ClientSubnet readies the answer to r, a question asked with EDNS Client Subnet (RFC 7871):
// every reply written through the w it returns carries the option back, FAMILY, SOURCE
// PREFIX-LENGTH and ADDRESS as asked and the scope of the answer (7.2.1: an authoritative
// server that implements the option echoes it, whether or not the answer used it), and the ctx
// it returns carries the option to the lookups, which note an answer chosen by where the
// client is placed (steer.WithSubnet): its scope is then what loc places the client by, 0
// otherwise. A question without the option gets ctx and w as they are. ok is false for a
// malformed option: the handler returns FORMERR (7.2.1), which CoreDNS writes, without the
// option.
func ClientSubnet(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, loc *steer.Locality) (context.Context, dns.ResponseWriter, bool) {
	s, malformed := steer.SubnetOf(r)
	if s == nil || malformed {
		return ctx, w, !malformed
	}
	return steer.WithSubnet(ctx, s), &subnetWriter{ResponseWriter: w, subnet: s, loc: loc}, true
}

// subnetWriter writes replies with the question's client subnet option (ClientSubnet).
type subnetWriter struct {
	dns.ResponseWriter
	subnet *steer.Subnet
	loc    *steer.Locality
}

// WriteMsg implements dns.ResponseWriter: m goes out with the option, in an OPT record of its
// own that CoreDNS's request.SizeAndDo, in front, completes with the client's size and DO bit
// rather than tacking on the question's (which would carry no option: CoreDNS copies only the
// options registered with it).
func (w *subnetWriter) WriteMsg(m *dns.Msg) error {
	echo := w.subnet.Reply(w.loc)
	opt := m.IsEdns0()
	if opt == nil {
		opt = &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
		m.Extra = append(m.Extra, opt)
	}
	kept := opt.Option[:0]
	for _, o := range opt.Option {
		if o.Option() != dns.EDNS0SUBNET {
			kept = append(kept, o)
		}
	}
	opt.Option = append(kept, echo)
	return w.ResponseWriter.WriteMsg(m)
}
