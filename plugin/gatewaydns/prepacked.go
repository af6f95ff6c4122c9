package gatewaydns

import (
	"sync"
	"sync/atomic"

	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/packed"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Packed replies (package packed): a name asked for once keeps its reply, in wire form, at its
// node in the index until a write changes it; later questions get a copy with their ID, flags
// and spelling patched in, which costs neither a message built nor one packed. NXDOMAIN and
// NODATA are written from the zone's SOA packed once per serial. The first question for a
// name, a name whose answers are not its records' alone (a CNAME, an SRV target looked up, a
// lease, a "*"), and a question that is not a plain one (EDNS options, another class or opcode,
// SOA, a name with unusual bytes) take the handler's usual path; the reply it writes is then
// packed for the next question where it can be.
//
// A name with a steering policy (issue 36) answers each question from a choice among its
// owners. Either the index keeps nothing packed for it (Keep's ownAnswers refuses a name whose
// records carry a policy), or the handler makes the choice first and packs per choice: the
// choice's number is the packed.Key's Variant, which Find and NewAnswer take (0 for a name
// without a policy). Either way the choice stays per question, and the packed reply is what
// follows from it.

// packer is a stanza's packed replies: its answer rules' token (the index may be shared with a
// stanza of other rules) and its zones' negative replies.
type packer struct {
	owner *packed.Owner
	zones map[string]*packedZone // by zone
	// writes is what the plugins in front of the handler let it write as bytes rather than as
	// a dns.Msg (chainWrites), set at startup; until then it writes messages only.
	writes atomic.Int32
	bufs   sync.Pool
}

type packedZone struct {
	prefix string // the zone's key prefix, which its serial is kept under
	neg    packed.Negatives
}

func newPacker(prefix string, zones []string) *packer {
	p := &packer{owner: packed.NewOwner(), zones: map[string]*packedZone{}}
	for _, z := range zones {
		p.zones[z] = &packedZone{prefix: record.ZoneDirs(prefix, []string{z})[0]}
	}
	p.bufs.New = func() any { b := make([]byte, 0, maxName+packed.MaxLen+512); return &b }
	return p
}

// packedQuestion is a question the packer may answer, and what it found for it.
type packedQuestion struct {
	q     packed.Query // but its Name
	zone  *packedZone
	probe index.Probe
	name  string // lower case
}

// servePacked writes the packed reply to the question of state, if there is one and the chain
// in front lets it write bytes, and reports whether it did. Otherwise, when pq.zone is set,
// keepPacked takes pq after the usual path answered.
func (g *GatewayDNS) servePacked(w dns.ResponseWriter, state *request.Request, zone string, b *backend, pq *packedQuestion) bool {
	if g.packer == nil {
		return false
	}
	r := state.Req
	if len(r.Question) != 1 || r.Opcode != dns.OpcodeQuery || len(r.Answer) != 0 || len(r.Ns) != 0 || !queryOf(state, &pq.q) {
		return false
	}
	writes := chainWrites(g.packer.writes.Load())
	a, neg, ok := g.packedAnswer(pq, state.Name(), zone, b, writes)
	if !ok {
		return false
	}
	if a == nil && writes == writesNoErrors {
		// NXDOMAIN behind prometheus, which takes the rcode from a message: the message of
		// backendError, with the zone's SOA as packed for this serial rather than made again.
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeNameError)
		m.Authoritative = true
		m.Ns = []dns.RR{neg.SOA()}
		w.WriteMsg(m) //nolint:errcheck // as backendError
		return true
	}
	bp := g.packer.bufs.Get().(*[]byte)
	defer g.packer.bufs.Put(bp)
	buf := (*bp)[:cap(*bp)]
	n, err := dns.PackDomainName(r.Question[0].Name, buf[:maxName], 0, nil, false)
	if err != nil {
		return false
	}
	pq.q.Name = buf[:n:n]
	out, ok := appendPacked(buf[maxName:maxName], &pq.q, a, neg)
	pq.q.Name = nil // the buffer goes back to the pool
	if !ok {
		return false
	}
	w.Write(out) //nolint:errcheck // as with WriteMsg, a failed write is the client's loss alone
	return true
}

// packedAnswer finds the packed reply to pq.q (its type, class and flags set; not its name),
// for name (lower case) in zone, from b, if one may be written behind plugins that take
// writes: a (nil: NXDOMAIN) and the zone's negative reply when it needs one. ok is false when
// the usual path answers; pq then holds what keepPacked takes after it (when pq.zone is set).
func (g *GatewayDNS) packedAnswer(pq *packedQuestion, name, zone string, b *backend, writes chainWrites) (a *packed.Answer, neg *packed.Negative, ok bool) {
	p := g.packer
	z := p.zones[zone]
	if z == nil || name == zone || pq.q.Qclass != dns.ClassINET || !packedType(pq.q.Qtype) || !plainName(name) || g.apexOf().Glued(name) {
		return nil, nil, false
	}
	pq.zone, pq.name = z, name
	pq.probe = b.Packed(name, z.prefix)
	switch {
	case writes == writesMsgs:
		return nil, nil, false
	case pq.probe.NX:
		if g.Fall.Through(name) {
			return nil, nil, false
		}
	default:
		if a = pq.probe.Name.Find(p.owner, packed.Key{Qtype: pq.q.Qtype}); a == nil {
			return nil, nil, false
		}
	}
	if a == nil || a.Negative() {
		var err error
		if neg, err = g.negative(z, pq.probe.Serial, b, zone); err != nil {
			return nil, nil, false
		}
	}
	return a, neg, true
}

// appendPacked appends the reply of a (nil: NXDOMAIN) to q to dst, if it fits the client's size.
func appendPacked(dst []byte, q *packed.Query, a *packed.Answer, neg *packed.Negative) ([]byte, bool) {
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

// negative is the zone's packed SOA at serial, as backendError writes it.
func (g *GatewayDNS) negative(z *packedZone, serial uint32, b *backend, zone string) (*packed.Negative, error) {
	minTTL := b.MinTTL(request.Request{})
	return z.neg.At(serial, minTTL, func() (*packed.Negative, error) {
		return packed.NewNegative(g.apexOf().SOAAt(zone, serial, minTTL))
	})
}

// keepPacked packs m, the reply the usual path made to pq (nil: a negative reply of rcode), for
// the next question of its name and type.
func (g *GatewayDNS) keepPacked(b *backend, pq *packedQuestion, m *dns.Msg, rcode int) {
	if pq.zone == nil || !pq.probe.Ref.Valid() {
		return
	}
	var a packed.Answer
	switch {
	case m != nil:
		var ok bool
		if a, ok = packed.NewAnswer(m, 0); !ok {
			return
		}
	case rcode == dns.RcodeSuccess:
		a = packed.NewNoData(packed.Key{Qtype: pq.q.Qtype})
	default:
		return
	}
	b.Keep(pq.probe.Ref, pq.name, pq.probe.Name.With(g.packer.owner, a))
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
// secondaries' serial checks and pace transfers (queried); DS goes to the parent (the server
// routes it); the meta types answer otherwise.
func packedType(qtype uint16) bool {
	switch qtype {
	case dns.TypeSOA, dns.TypeDS, dns.TypeAXFR, dns.TypeIXFR, dns.TypeANY, dns.TypeOPT, dns.TypeTSIG, dns.TypeTKEY, dns.TypeMAILA, dns.TypeMAILB:
		return false
	}
	return true
}
