// Package prepacked is a stanza's packed replies, as the handler answers from them: a name
// asked for once keeps its reply, in wire form, at its node in the index until a write changes
// it; later questions get a copy with their ID, flags and spelling patched in, which costs
// neither a message built nor one packed. NXDOMAIN and NODATA are written from the zone's SOA
// packed once per serial. The first question for a name, a name whose answers are not its
// records' alone (a CNAME, an SRV target looked up, a lease, a "*"), and a question that is
// not a plain one (EDNS options, another class or opcode, SOA, a name with unusual bytes) take
// the handler's usual path; the reply it writes is then packed for the next question where it
// can be (Keep). The wire form is package packed's; what the index keeps, index/packed.go's.
//
// A name with a steering policy (issue 36) answers each question from a choice among its
// owners. Either the index keeps nothing packed for it (Keep's ownAnswers refuses a name whose
// records carry a policy), or the handler makes the choice first and packs per choice: the
// choice's number is the packed.Key's Variant, which Find and NewAnswer take (0 for a name
// without a policy). Either way the choice stays per question, and the packed reply is what
// follows from it.
package prepacked

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/packed"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/steer"
)

// Rules are the handler's answer rules the packed replies must follow: its apex (whose glued
// names answer otherwise) and its fallthrough (whose NXDOMAIN is the next plugin's).
type Rules struct {
	Apex        func() *answer.Apex
	FallThrough func(name string) bool
	// Locality places the stanza's clients (nil: none), so that a name of several owners is
	// answered from a choice per question, packed per choice (index.Index.PackedAsked).
	Locality *steer.Locality
	// Tally counts the answers of the names it lists by owner (nil: none).
	Tally *steer.Tally
}

// Packer is a stanza's packed replies: its answer rules' token (the index may be shared with a
// stanza of other rules) and its zones' negative replies.
type Packer struct {
	rules Rules
	owner *packed.Owner
	zones map[string]*zone // by zone
	// writes is what the plugins in front of the handler let it write as bytes rather than as
	// a dns.Msg (Writes), set at startup; until then it writes messages only.
	writes atomic.Int32
	bufs   sync.Pool
}

type zone struct {
	prefix string // the zone's key prefix, which its serial is kept under
	neg    packed.Negatives
}

// New is the packed replies of zones, whose records are under prefix, answered by rules.
func New(prefix string, zones []string, rules Rules) *Packer {
	p := &Packer{rules: rules, owner: packed.NewOwner(), zones: map[string]*zone{}}
	for _, z := range zones {
		p.zones[z] = &zone{prefix: record.ZoneDirs(prefix, []string{z})[0]}
	}
	p.bufs.New = func() any { b := make([]byte, 0, maxName+packed.MaxLen+512); return &b }
	return p
}

// SetWrites says how the plugins in front let the handler write (WritesFor).
func (p *Packer) SetWrites(w Writes) { p.writes.Store(int32(w)) }

// Question is a question the packer may answer, and what it found for it.
type Question struct {
	q     packed.Query // but its Name
	zone  *zone
	probe index.Probe
	name  string // lower case
}

// Draw is the draw of the choice a steered name's probe found the question's variant with;
// ok is false for any other question. The question's lookup must draw with it
// (index.WithDraw), for Keep to keep its reply as that variant.
func (q *Question) Draw() (draw uint64, ok bool) { return q.probe.Draw, q.probe.Variant != 0 }

// Serve writes the packed reply to the question of state, if there is one and the chain in
// front lets it write bytes, and reports whether it did. Otherwise, when it found where the
// reply would be kept, Keep takes pq after the usual path answered.
func (p *Packer) Serve(w dns.ResponseWriter, state *request.Request, zone string, ix *index.Index, pq *Question) bool {
	if p == nil {
		return false
	}
	r := state.Req
	if len(r.Question) != 1 || r.Opcode != dns.OpcodeQuery || len(r.Answer) != 0 || len(r.Ns) != 0 || !queryOf(state, &pq.q) {
		return false
	}
	writes := Writes(p.writes.Load())
	asker := index.Asker{Locality: p.rules.Locality, W: state.W, Req: r}
	a, neg, ok := p.find(pq, state.Name(), zone, ix, writes, &asker)
	if !ok {
		return false
	}
	if a == nil && writes == WritesNoErrors {
		// NXDOMAIN behind prometheus, which takes the rcode from a message: the message of
		// answer.BackendError, with the zone's SOA as packed for this serial rather than made
		// again.
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeNameError)
		m.Authoritative = true
		m.Ns = []dns.RR{neg.SOA()}
		w.WriteMsg(m) //nolint:errcheck // as answer.BackendError
		return true
	}
	bp := p.bufs.Get().(*[]byte)
	defer p.bufs.Put(bp)
	buf := (*bp)[:cap(*bp)]
	n, err := dns.PackDomainName(r.Question[0].Name, buf[:maxName], 0, nil, false)
	if err != nil {
		return false
	}
	pq.q.Name = buf[:n:n]
	out, ok := appendReply(buf[maxName:maxName], &pq.q, a, neg)
	pq.q.Name = nil // the buffer goes back to the pool
	if !ok {
		return false
	}
	w.Write(out) //nolint:errcheck // as with WriteMsg, a failed write is the client's loss alone
	pq.probe.Count(p.rules.Tally)
	return true
}

// AppendBatched appends the packed reply to q (its name, in wire form, set) for name (lower
// case, plain) in zone, asked from the client address from, to dst, for the batched UDP path,
// where nothing in front reads replies:
// nx tells an NXDOMAIN. ok is false when the server is to answer: no packed reply, one too
// large, or, with shuffle (loadbalance in front), one the path could not shuffle as
// loadbalance would.
func (p *Packer) AppendBatched(dst []byte, q *packed.Query, name, zone string, ix *index.Index, from net.Addr, shuffle bool, rand func() uint32) (out []byte, nx, ok bool) {
	pq := Question{q: *q}
	asker := index.Asker{Locality: p.rules.Locality, From: from, ID: q.ID}
	a, neg, ok := p.find(&pq, name, zone, ix, WritesAll, &asker)
	if !ok || shuffle && a != nil && !a.Negative() && !a.Shufflable() {
		return dst, false, false
	}
	out, ok = appendReply(dst, q, a, neg)
	if !ok {
		return dst, false, false
	}
	if shuffle && a != nil {
		a.Shuffle(out, rand)
	}
	pq.probe.Count(p.rules.Tally)
	return out, a == nil, true
}
