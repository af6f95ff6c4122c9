package index

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/steer"
)

// Asker is who asks a question, for the names answered from a choice among their owners
// (steerset.go): where the stanza's locality places the client, by the EDNS Client Subnet a
// forwarder sends or else by its address. The zero Asker places no one.
type Asker struct {
	Locality *steer.Locality // the stanza's; nil: it places no one
	W        dns.ResponseWriter
	Req      *dns.Msg
	From     net.Addr // the client's address where there is no W (the batched UDP path)
	ID       uint16   // the question's ID where there is no Req (the batched UDP path)
	// Subnet is the question's EDNS Client Subnet option, told when the answer is chosen by
	// where the client is placed, for the scope its reply carries; nil: none.
	Subnet *steer.Subnet
	// Draw, when Drawn, is the random number the choice is drawn with: the probe's of the
	// question (Probe.Draw), so that the reply made is of the variant it probed.
	Draw  uint64
	Drawn bool
	// Tally counts the choice of a name it lists (nil: none): the stanza's, where the choice
	// answers the question. A packed reply's is counted by its writer (Probe.Count).
	Tally *steer.Tally
}

// draw is the random number of a's choice. For a question from a UDP or TCP client it is a
// keyed hash of the question's ID and the client's address and port: as random to anyone else
// as the ID and port are (RFC 5452), and the same for the same question wherever it is drawn.
// The batched UDP path hands a question whose variant has no packed reply yet to the server,
// which then draws the same variant and packs its reply (steerpacked.go); drawn afresh there,
// a variant of weight 10 in 100 took hundreds of questions to be packed, and the path handed
// over nearly every question of it meanwhile. A retransmitted question gets the same answer too.
func (a *Asker) draw() uint64 {
	if a.Drawn {
		return a.Draw
	}
	id := a.ID
	if a.Req != nil {
		id = a.Req.Id
	}
	ip, port, ok := ipPort(a.remote())
	if !ok {
		return rand.Uint64()
	}
	var b [16]byte
	copy(b[:], ip.To16())
	x := drawSeed ^ uint64(id)<<16 ^ uint64(port&0xffff) // #nosec G115 -- a port
	x = mix(x ^ binary.LittleEndian.Uint64(b[:8]))
	return mix(x ^ binary.LittleEndian.Uint64(b[8:]))
}

// mix is a bijective finalizer of 64 bits (splitmix64's): every bit of its input flips
// each bit of its output with a probability of about a half, which is what Pick's draw by
// weight takes from it. maphash.Comparable cost several times as much per question.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// drawSeed keys the draws: another process draws otherwise for the same question.
var drawSeed = rand.Uint64()

// placing reports whether the asker's stanza places clients at all: a name that several owners
// publish then answers from a choice even without a policy (the client's own cluster first).
func (a *Asker) placing() bool { return a != nil && a.Locality.Configured() }

// client places the asker, for a choice that depends on where it is: the question's Subnet
// is told so. It allocates nothing.
func (a *Asker) client() steer.Client {
	if !a.placing() {
		return steer.Client{}
	}
	a.Subnet.Placed()
	if a.Req != nil {
		if addr, bits, ok := steer.ClientSubnet(a.Req); ok {
			return a.Locality.Client(addr, bits)
		}
	}
	addr, ok := addrOf(a.remote())
	if !ok {
		return steer.Client{}
	}
	return a.Locality.Client(addr, -1)
}

// remote is the client's address: the writer's, or From on the batched UDP path.
func (a *Asker) remote() net.Addr {
	if a.W != nil {
		return a.W.RemoteAddr()
	}
	return a.From
}

// ipPort is the IP and port of a UDP or TCP client's address; ok is false for another.
func ipPort(a net.Addr) (ip net.IP, port int, ok bool) {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.IP, a.Port, true
	case *net.TCPAddr:
		return a.IP, a.Port, true
	}
	return nil, 0, false
}

// addrOf is the address of a client's net.Addr.
func addrOf(a net.Addr) (netip.Addr, bool) {
	ip, _, ok := ipPort(a)
	if !ok {
		if a == nil {
			return netip.Addr{}, false
		}
		ap, err := netip.ParseAddrPort(a.String())
		return ap.Addr().Unmap(), err == nil
	}
	addr, ok := netip.AddrFromSlice(ip)
	return addr.Unmap(), ok
}

// RecordsAsked is Records for a question asked by a: a name answered from a choice among its
// owners (steerset.go) gives the records of the owners chosen for a.
func (ix *Index) RecordsAsked(state request.Request, exact bool, a Asker) ([]msg.Service, error) {
	sx, _, err := ix.records(state.Name(), state.QType(), exact, answered, &a)
	return sx, err
}

// ServicesAsked is Services for a question asked by a.
func (ix *Index) ServicesAsked(state request.Request, exact bool, a Asker) ([]msg.Service, error) {
	sx, err := ix.RecordsAsked(state, exact, a)
	if err != nil {
		return nil, err
	}
	return group(sx), nil
}

// chosenSet is what a question of qtype asked by a is answered from, of set: the records of
// the owners chosen for it where the set is steered, set itself otherwise (a nil: no choice,
// as Explain reads every record).
func (ix *Index) chosenSet(set *answerSet, qtype uint16, a *Asker) *answerSet {
	if a == nil {
		return set
	}
	qs := set.forQuestion(qtype)
	st := qs.steering(qtype, a.placing())
	if st == nil {
		return set
	}
	var loc *steer.Locality
	if a.placing() {
		loc = a.Locality
	}
	return st.prepared(qs, ix.view(), loc).chosen(qs, a.client(), a.draw(), a.Tally)
}

// steeredAddresses appends the addresses of set's owners chosen for a question of qtype asked
// by a; steered is false for a set that is not steered for a, ok false for a steered set of
// other records than addresses (the caller takes plugin.A's way).
func (ix *Index) steeredAddresses(dst []Address, set *answerSet, qtype uint16, a *Asker) (addrs []Address, steered, ok bool) {
	st := set.steering(qtype, a.placing())
	if st == nil {
		return dst, false, false
	}
	var loc *steer.Locality
	if a.placing() {
		loc = a.Locality
	}
	p := st.prepared(set, ix.view(), loc)
	if !p.plain {
		return dst, true, false
	}
	return p.appendAddresses(dst, qtype, a.client(), a.draw(), a.Tally), true, true
}

// ExplainSteering is how an A question for the name of state, asked by a, is answered where
// the name is steered: the choice (steer.Name.Explain) and a report of every owner, with the
// records' owners in this server's view of the checks; ok is false for a name that is not.
func (ix *Index) ExplainSteering(state request.Request, a Asker) (res steer.Result, reports []steer.Report, ok bool) {
	var buf [maxLabels]string
	labels, star := ix.labels(buf[:0], state.Name())
	if star >= 0 {
		return res, nil, false
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	id, depth := ix.tree.find(labels)
	if id == 0 {
		return res, nil, false
	}
	set := ix.nameSet(id, labels, depth)
	if set == nil {
		return res, nil, false
	}
	qs := set.forQuestion(dns.TypeA)
	st := qs.steering(dns.TypeA, a.placing())
	if st == nil {
		return res, nil, false
	}
	var loc *steer.Locality
	if a.placing() {
		loc = a.Locality
	}
	res, reports = st.prepared(qs, ix.view(), loc).name.Explain(a.client(), a.draw())
	return res, reports, true
}
