package prepacked

import (
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/packed"
)

// find finds the packed reply to pq.q (its type, class and flags set; not its name), for name
// (lower case) in zone, from ix, if one may be written behind plugins that take writes: a
// (nil: NXDOMAIN) and the zone's negative reply when it needs one. ok is false when the usual
// path answers; pq then holds what Keep takes after it (when pq.zone is set).
func (p *Packer) find(pq *Question, name, zoneName string, ix *index.Index, writes Writes, asker *index.Asker) (a *packed.Answer, neg *packed.Negative, ok bool) {
	z := p.zones[zoneName]
	if z == nil || name == zoneName || pq.q.Qclass != dns.ClassINET || !packedType(pq.q.Qtype) || !plainName(name) || p.rules.Apex().Glued(name) {
		return nil, nil, false
	}
	pq.zone, pq.name = z, name
	pq.probe = ix.PackedAsked(name, z.prefix, asker)
	switch {
	case writes == WritesMsgs:
		return nil, nil, false
	case pq.probe.NX:
		if p.rules.FallThrough(name) {
			return nil, nil, false
		}
	default:
		if a = pq.probe.Name.Find(p.owner, packed.Key{Qtype: pq.q.Qtype, Variant: pq.probe.Variant}); a == nil {
			return nil, nil, false
		}
	}
	if a == nil || a.Negative() {
		var err error
		if neg, err = p.negative(z, pq.probe.Serial, ix, zoneName); err != nil {
			return nil, nil, false
		}
	}
	return a, neg, true
}

// appendReply appends the reply of a (nil: NXDOMAIN) to q to dst, if it fits the client's size.
func appendReply(dst []byte, q *packed.Query, a *packed.Answer, neg *packed.Negative) ([]byte, bool) {
	if a == nil {
		if !q.Fits(packed.NegativeLen(q, neg)) {
			return dst, false
		}
		return packed.AppendNegative(dst, q, dns.RcodeNameError, neg), true
	}
	if !q.Fits(a.Len(q, neg)) {
		return dst, false
	}
	return a.AppendReply(dst, q, neg), true
}

// maxName is the longest name in wire form.
const maxName = 255

// negative is the zone's packed SOA at serial, as answer.BackendError writes it.
func (p *Packer) negative(z *zone, serial uint32, ix *index.Index, zoneName string) (*packed.Negative, error) {
	minTTL := ix.MinTTL(request.Request{})
	return z.neg.At(serial, minTTL, func() (*packed.Negative, error) {
		return packed.NewNegative(p.rules.Apex().SOAAt(zoneName, serial, minTTL))
	})
}

// Keep packs m, the reply the usual path made to pq (nil: a negative reply of rcode), for the
// next question of its name and type.
func (p *Packer) Keep(ix *index.Index, pq *Question, m *dns.Msg, rcode int) {
	if p == nil || pq.zone == nil || !pq.probe.Ref.Valid() {
		return
	}
	placing := p.rules.Locality.Configured()
	if pq.probe.Steered(placing) {
		return // answered from a choice no variant of which is packed
	}
	var a packed.Answer
	switch {
	case m != nil:
		var ok bool
		if a, ok = packed.NewAnswer(m, pq.probe.Variant); !ok {
			return
		}
	case rcode == dns.RcodeSuccess:
		a = packed.NewNoData(packed.Key{Qtype: pq.q.Qtype, Variant: pq.probe.Variant})
	default:
		return
	}
	ix.KeepFor(pq.probe.Ref, pq.name, pq.probe.Name.With(p.owner, a), placing)
}

// queryOf is the packed.Query of state's question, but its name; ok is false for a question
// with more than an OPT record without options (version 0).
func queryOf(state *request.Request, q *packed.Query) bool {
	r := state.Req
	*q = packed.Query{ID: r.Id, Qtype: r.Question[0].Qtype, Qclass: r.Question[0].Qclass}
	if r.RecursionDesired {
		q.Flags |= 1 << 8
	}
	if r.CheckingDisabled {
		q.Flags |= 1 << 4
	}
	switch len(r.Extra) {
	case 0:
	case 1:
		o, ok := r.Extra[0].(*dns.OPT)
		if !ok || len(o.Option) != 0 || o.Version() != 0 || o.Hdr.Name != "." {
			return false
		}
		q.OPT, q.UDPSize, q.OPTTTL = true, o.UDPSize(), o.Hdr.Ttl
	default:
		return false
	}
	q.TCP = state.Proto() == "tcp"
	q.Family = state.Family()
	return true
}

// plainName reports whether name (lower case) has only letters, digits, '-' and '_' in its
// labels: what the batched UDP path reads without unpacking, and what needs no escape.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return len(name) > 1
}

// packedType reports whether questions of qtype may be answered packed. SOA questions are the
// secondaries' serial checks and pace transfers (xfr.Queried); DS goes to the parent (the
// server routes it); the meta types answer otherwise.
func packedType(qtype uint16) bool {
	switch qtype {
	case dns.TypeSOA, dns.TypeDS, dns.TypeAXFR, dns.TypeIXFR, dns.TypeANY, dns.TypeOPT, dns.TypeTSIG, dns.TypeTKEY, dns.TypeMAILA, dns.TypeMAILB:
		return false
	}
	return true
}
