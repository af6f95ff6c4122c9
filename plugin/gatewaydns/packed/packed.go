// Package packed holds answers in wire format, packed once and written to every later question
// for the same name and type with the question's ID, flags and spelling of the name patched in:
// a reply that costs a copy, not a message built, packed and collected per question. The
// index keeps them beside its cached answer sets, one Name per name, and drops them with the
// name's sets when a write changes the name; the handler and the batched UDP path write them.
//
// A reply is packed as CoreDNS writes it to a question without EDNS options: uncompressed (it
// fits the client's size), with the request's OPT record appended (request.SizeAndDo). Writing
// one for a question it does not fit (a larger reply than the client takes, EDNS options,
// another opcode) is the caller's to refuse: Query.Fits and ParseQuery say which.
package packed

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/miekg/dns"
)

// Owner is the answer rules that packed a Name's replies: a stanza's. Two stanzas may share
// one index (a reload shares the feed) with other rules (another nameserver option): a Name
// answers only its own Owner.
type Owner struct{ _ byte }

// NewOwner is a new set of answer rules.
func NewOwner() *Owner { return new(Owner) }

// Key is what a name's packed replies are told apart by: the type of question, and the variant
// of the name's answer it was made for. A name without a steering policy has one variant, 0;
// one whose answer is an owner set chosen per question (issue 36: weights, tiers, health,
// locality) is packed per choice, the handler choosing before it looks the reply up, or not at
// all (the index keeps none for it).
type Key struct {
	Qtype   uint16
	Variant uint32
}

// Answer is one packed reply to a type of question for a name.
type Answer struct {
	key Key
	// neg: no data of the type (NODATA), written as the zone's negative reply (Negative).
	neg bool
	// msg is the reply to the question in lower case, with ID 0 and RD and CD clear; names are
	// the offsets where the question's name is written in it: in the question, and as the
	// owner of every answer record (the handler writes the name as asked there, and every other
	// name from the zone's data).
	msg   []byte
	names []uint16
	// stride is the length of each answer record where they are all A or all AAAA records
	// and the reply holds nothing else, so that they can be shuffled (Shuffle); 0 otherwise.
	stride uint16
}

// Name is the packed replies of one name, by type of question. It never changes: a reply
// of another type makes a new Name (With).
type Name struct {
	owner *Owner
	// keys are the keys of the first answers, beside the owner: Find reads the one cache line
	// of the Name and then the answer it finds, not every answer's before it (a steered name
	// holds one per choice, a name asked A and AAAA two).
	keys    [inlineKeys]Key
	answers []Answer
}

// inlineKeys is how many answers' keys a Name holds beside its owner: a Name is 64 bytes.
const inlineKeys = 4

// Find is the reply of o for k, nil when none is packed.
func (n *Name) Find(o *Owner, k Key) *Answer {
	if n == nil || n.owner != o {
		return nil
	}
	inline := min(len(n.answers), inlineKeys)
	for i := range inline {
		if n.keys[i] == k {
			return &n.answers[i]
		}
	}
	for i := inline; i < len(n.answers); i++ {
		if n.answers[i].key == k {
			return &n.answers[i]
		}
	}
	return nil
}

// With is n with a, which replaces n's reply of a's key; another owner's replies are dropped.
func (n *Name) With(o *Owner, a Answer) *Name {
	out := &Name{owner: o}
	if n != nil && n.owner == o {
		out.answers = make([]Answer, 0, len(n.answers)+1)
		for _, b := range n.answers {
			if b.key != a.key {
				out.answers = append(out.answers, b)
			}
		}
	}
	out.answers = append(out.answers, a)
	for i := range min(len(out.answers), inlineKeys) {
		out.keys[i] = out.answers[i].key
	}
	return out
}

// Len is how many bytes n holds, for a budget.
func (n *Name) Len() int {
	l := 0
	for _, a := range n.answers {
		l += len(a.msg) + 2*len(a.names) + 48
	}
	return l + 64 // the Name itself
}

// MaxLen is the largest reply kept packed: larger ones are rare, and are truncated for most
// UDP clients anyway.
const MaxLen = 1232

// NewNoData is the reply for k of a name that has no data of its type.
func NewNoData(k Key) Answer { return Answer{key: k, neg: true} }

// NewAnswer packs m, the handler's positive reply to the question of a request, for every
// later question of the same type for the same name, of the answer's variant: ok is false for a
// reply of another shape than packed replies take (an rcode, an answer record named otherwise
// than the question, an OPT, truncation, compression, a reply longer than MaxLen).
func NewAnswer(m *dns.Msg, variant uint32) (a Answer, ok bool) {
	if len(m.Question) != 1 || m.Rcode != dns.RcodeSuccess || m.Truncated || m.Compress || m.Opcode != dns.OpcodeQuery || len(m.Answer) == 0 {
		return a, false
	}
	q := m.Question[0]
	for _, rr := range m.Answer {
		if rr.Header().Name != q.Name {
			return a, false
		}
	}
	for _, rr := range m.Extra {
		if rr.Header().Rrtype == dns.TypeOPT {
			return a, false
		}
	}
	c := *m // a shallow copy: the header changes here only
	c.Id, c.RecursionDesired, c.CheckingDisabled = 0, false, false
	msg, err := c.Pack()
	if err != nil || len(msg) > MaxLen {
		return a, false
	}
	name := wireName(msg, 12)
	if name < 0 {
		return a, false
	}
	a = Answer{key: Key{Qtype: q.Qtype, Variant: variant}, msg: msg, names: []uint16{12}}
	off := 12 + name + 4
	for range m.Answer {
		a.names = append(a.names, uint16(off)) // #nosec G115 -- off < MaxLen
		n := wireName(msg, off)
		if n != name || !equalFold(msg[off:off+n], msg[12:12+name]) || off+n+10 > len(msg) {
			return Answer{}, false
		}
		off += n + 10 + int(binary.BigEndian.Uint16(msg[off+n+8:]))
	}
	if off > len(msg) {
		return Answer{}, false
	}
	lower(msg[12 : 12+name])
	for _, o := range a.names[1:] {
		copy(msg[o:], msg[12:12+name])
	}
	if t := m.Answer[0].Header().Rrtype; (t == dns.TypeA || t == dns.TypeAAAA) && len(m.Ns) == 0 && len(m.Extra) == 0 {
		a.stride = uint16((len(msg) - int(a.names[1])) / len(m.Answer)) // #nosec G115 -- < MaxLen
		for _, rr := range m.Answer {
			if rr.Header().Rrtype != t {
				a.stride = 0
			}
		}
	}
	return a, true
}

// Shufflable reports whether Shuffle can reorder a's reply: its records are all A or all AAAA
// records, and it holds nothing else.
func (a *Answer) Shufflable() bool { return a.stride != 0 }

// Shuffle reorders the answer records of reply, a's reply as AppendReply wrote it, as CoreDNS's
// loadbalance plugin (round_robin) reorders a reply of addresses: a random permutation, with
// random drawing the numbers.
func (a *Answer) Shuffle(reply []byte, random func() uint32) {
	if a.stride == 0 || len(a.names) < 3 {
		return
	}
	first, l, stride := int(a.names[1]), len(a.names)-1, int(a.stride)
	swap := func(i, j int) {
		x, y := reply[first+i*stride:first+(i+1)*stride], reply[first+j*stride:first+(j+1)*stride]
		for k := range x {
			x[k], y[k] = y[k], x[k]
		}
	}
	if l == 2 {
		if random()%2 == 0 {
			swap(0, 1)
		}
		return
	}
	for j := range l {
		if p := j + int(random()%uint32(l-j)); p != j { // #nosec G115 -- l is a record count
			swap(j, p)
		}
	}
}

// wireName is the length of the uncompressed name at off in msg, -1 when it is compressed or
// runs past msg.
func wireName(msg []byte, off int) int {
	for i := off; i < len(msg); {
		l := int(msg[i])
		switch {
		case l == 0:
			return i + 1 - off
		case l&0xC0 != 0:
			return -1
		}
		i += l + 1
	}
	return -1
}

func lower(b []byte) {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
}

// equalFold compares two wire names in ASCII case.
func equalFold(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// Negative is a zone's negative replies' authority section: its SOA record at one serial, as
// the handler writes it for NXDOMAIN and NODATA.
type Negative struct {
	serial, minTTL uint32
	soa            []byte
	rr             *dns.SOA
}

// NewNegative packs soa, the zone's SOA record, whose serial and minimum say when it is current.
func NewNegative(soa *dns.SOA) (*Negative, error) {
	buf := make([]byte, dns.Len(soa))
	n, err := dns.PackRR(soa, buf, 0, nil, false)
	if err != nil {
		return nil, err
	}
	return &Negative{serial: soa.Serial, minTTL: soa.Minttl, soa: buf[:n], rr: soa}, nil
}

// SOA is the record n packs, for a negative reply written as a message. It is shared by every
// such reply: nothing may change it.
func (n *Negative) SOA() *dns.SOA { return n.rr }

// Negatives keeps a zone's Negative at its newest serial.
type Negatives struct{ p atomic.Pointer[Negative] }

// At is the Negative at serial with the minimum minTTL, made by pack when the one kept is of
// another.
func (ns *Negatives) At(serial, minTTL uint32, pack func() (*Negative, error)) (*Negative, error) {
	if n := ns.p.Load(); n != nil && n.serial == serial && n.minTTL == minTTL {
		return n, nil
	}
	n, err := pack()
	if err != nil {
		return nil, err
	}
	ns.p.Store(n)
	return n, nil
}
