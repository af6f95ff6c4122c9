package index

import (
	"strings"
	"sync/atomic"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/steer"
)

// Steering in the index (shared/spec/steering.md): a name that several owners publish answers
// per question from a choice among its owners (package steer) when some owner declares a policy,
// or when the stanza places clients (Asker) and more than one owner publishes it. Every other
// name answers its records' union, by the paths it took before steering: its answer set carries
// no steering (nil), and costs nothing more.
//
// A steered set keeps each record's owner and policy (setSteer). The first question after the
// records or the health of their addresses change prepares the choice (steerPrep: the owners,
// who is eligible, each owner's addresses), which every later question draws from, in memory.

// steerRec is what steering reads of one record of a set.
type steerRec struct {
	owner    string
	steering record.Steering
}

// setSteer is the steering of an answer set: its records' owners and policies, by position.
type setSteer struct {
	prep    atomic.Pointer[steerPrep]
	nameKey string // the name's key (its records' parent), which a steer.Tally counts by
	policy  bool   // some record carries a policy
	// ruled: the set mixes a CNAME with other data (cname.go), and its answers are not the
	// variants of one choice: none is packed.
	ruled  bool
	owners int // how many owners the records have
	recs   []steerRec
}

// newSetSteer is the steering of a set of recs (sorted by key), nil when it has none: no
// policy and one owner, or records of more than one name (a subtree read above the names:
// steering is a name's). It allocates only for a steered set: it runs for every set made.
func newSetSteer(recs []rec) *setSteer {
	if len(recs) == 0 {
		return nil
	}
	policy, several := false, false
	for _, r := range recs {
		policy = policy || r.e.flags&steeredFlag != 0
		several = several || r.e.ownerName() != recs[0].e.ownerName()
	}
	if !policy && !several {
		return nil
	}
	name := recordName(recs[0].key)
	st := &setSteer{recs: make([]steerRec, len(recs)), policy: policy, nameKey: name}
	var owners []string
	for i, r := range recs {
		if recordName(r.key) != name {
			return nil
		}
		st.recs[i] = steerRec{owner: r.e.ownerName(), steering: r.e.steering()}
		if !containsString(owners, st.recs[i].owner) {
			owners = append(owners, st.recs[i].owner)
		}
	}
	st.owners = len(owners)
	return st
}

func containsString(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// recordName is the key of the name a record at key belongs to: the key without a last label
// that is a record id (".../app/3e6bee2e", the writers' layout), the key itself otherwise.
func recordName(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 && record.IsRecordID(key[i+1:]) {
		return key[:i]
	}
	return key
}

// steered reports whether questions for the set are answered from a choice: some record has a
// policy, or the asker's stanza places clients (placing) and the records have several owners.
func (st *setSteer) steered(placing bool) bool {
	return st != nil && (st.policy || placing && st.owners > 1)
}

// steering is the set's steering when its questions of qtype are answered from a choice, nil
// when they answer the union. Only address and CNAME questions are steered: text, SRV and MX
// answers are the union, as an owner's policy is about where its addresses send clients.
func (s *answerSet) steering(qtype uint16, placing bool) *setSteer {
	if s.rare == nil || !s.rare.steer.steered(placing) {
		return nil
	}
	switch qtype {
	case dns.TypeA, dns.TypeAAAA, dns.TypeCNAME:
		return s.rare.steer
	}
	return nil
}

func (s *answerSet) setSteering(st *setSteer) {
	if st == nil {
		return
	}
	if s.rare == nil {
		s.rare = &rareParts{}
	}
	s.rare.steer = st
}

// subset is the steering of the records of st at positions keep.
func (st *setSteer) subset(keep []int) *setSteer {
	if st == nil {
		return nil
	}
	out := &setSteer{recs: make([]steerRec, 0, len(keep))}
	var owners []string
	for _, i := range keep {
		r := st.recs[i]
		out.recs = append(out.recs, r)
		out.policy = out.policy || !r.steering.IsZero()
		if !containsString(owners, r.owner) {
			owners = append(owners, r.owner)
		}
	}
	out.owners = len(owners)
	if !out.policy && out.owners < 2 {
		return nil
	}
	return out
}

// steerPrep is a steered set's choice prepared for questions, at one health view and with one
// stanza's locality: the owners, each record's owner and whether its address is held down,
// and for a set of addresses each owner's addresses.
type steerPrep struct {
	view     *healthView
	locality *steer.Locality
	st       *setSteer // the steering it is the choice of
	// probe is what a probe reads of the choice, with the replies of its choices packed so
	// far (steerpacked.go): a Keep replaces it with one that holds one reply more.
	probe atomic.Pointer[choiceProbe]

	name  *steer.Name
	owner []int  // by position: the index of its owner in name.Owners(); -1 for text alone
	down  []bool // by position: its health check holds it down
	// plain: the set is addresses alone (answerSet.addresses), and v4, v6 are each owner's
	// addresses not held down, all4, all6 each owner's every address (failing open), in key
	// order, the first of each host.
	plain              bool
	v4, v6, all4, all6 [][]Address
	failOpen           bool
}

// prepared is st's prep for view and loc, made now if the one kept is for another.
func (st *setSteer) prepared(s *answerSet, view *healthView, loc *steer.Locality) *steerPrep {
	if p := st.prep.Load(); p != nil && p.view == view && p.locality == loc {
		return p
	}
	p := newSteerPrep(st, s, view, loc)
	st.prep.Store(p)
	return p
}

func newSteerPrep(st *setSteer, s *answerSet, view *healthView, loc *steer.Locality) *steerPrep {
	p := &steerPrep{view: view, locality: loc, st: st, owner: make([]int, len(st.recs)), down: make([]bool, len(st.recs))}
	var g steer.Group
	for i, r := range st.recs {
		if s.services[i].Host == "" {
			p.owner[i] = -1 // text alone: no address to steer, answered to TXT questions only
			continue
		}
		p.down[i] = view.isDown(r.steering.HealthCheck, s.services[i].Host)
		p.owner[i] = g.Add(r.owner, r.steering, p.down[i])
	}
	p.name = steer.Prepare(g.Owners(loc))
	p.failOpen = p.name.Transfer(nil).Rule == steer.RuleFailOpen
	a := s.addresses()
	if p.plain = a.plain && !a.text && !grouped(s.services) && len(s.leased()) == 0; p.plain {
		p.addresses(s)
	}
	p.probe.Store(newChoiceProbe(p, p.plain && !st.ruled && st.steered(loc != nil)))
	return p
}

// grouped reports whether some service names a group (msg.Group then leaves records out).
func grouped(sx []msg.Service) bool {
	for i := range sx {
		if sx[i].Group != "" {
			return true
		}
	}
	return false
}

// addresses works out each owner's addresses, as addresses.fill does for the whole set.
func (p *steerPrep) addresses(s *answerSet) {
	n := len(p.name.Owners())
	p.v4, p.v6, p.all4, p.all6 = make([][]Address, n), make([][]Address, n), make([][]Address, n), make([][]Address, n)
	for i, svc := range s.services {
		if svc.Host == "" {
			continue
		}
		o := p.owner[i]
		what, ip := svc.HostType()
		if p.ownerHas(s.services[:i], o, svc.Host) {
			continue // as plugin.A leaves out a host it has answered
		}
		a := Address{IP: ip, TTL: svc.TTL}
		switch what {
		case dns.TypeA:
			p.all4[o] = append(p.all4[o], a)
			if !p.down[i] {
				p.v4[o] = append(p.v4[o], a)
			}
		case dns.TypeAAAA:
			p.all6[o] = append(p.all6[o], a)
			if !p.down[i] {
				p.v6[o] = append(p.v6[o], a)
			}
		}
	}
}

// ownerHas reports whether a record of owner o among sx (the set's first records) has host.
func (p *steerPrep) ownerHas(sx []msg.Service, o int, host string) bool {
	for i := range sx {
		if p.owner[i] == o && sx[i].Host == host {
			return true
		}
	}
	return false
}

// maxChosen is how many owners a question's choice holds on the stack.
const maxChosen = 8

// appendAddresses appends the addresses of the owners chosen for client c (rnd drawing) to
// dst: of qtype's family, not held down unless the choice fails open, each address once.
func (p *steerPrep) appendAddresses(dst []Address, qtype uint16, c steer.Client, rnd uint64, t *steer.Tally) []Address {
	var buf [maxChosen]int
	res := p.name.Choose(c, rnd, buf[:0])
	t.Count(p.st.nameKey, p.name.Owners(), res.Owners)
	by := p.v4
	switch {
	case qtype == dns.TypeAAAA && res.AllAddresses():
		by = p.all6
	case qtype == dns.TypeAAAA:
		by = p.v6
	case res.AllAddresses():
		by = p.all4
	}
	start := len(dst)
	for _, o := range res.Owners {
		for _, a := range by[o] {
			if !addressIn(dst[start:], a) {
				dst = append(dst, a)
			}
		}
	}
	return dst
}

func addressIn(list []Address, a Address) bool {
	for _, b := range list {
		if b.IP.Equal(a.IP) {
			return true
		}
	}
	return false
}

// chosen is the subset of s, the set p was prepared from, that answers client c (rnd
// drawing): the records of the chosen owners, but those held down unless failing open.
func (p *steerPrep) chosen(s *answerSet, c steer.Client, rnd uint64, t *steer.Tally) *answerSet {
	var buf [maxChosen]int
	res := p.name.Choose(c, rnd, buf[:0])
	t.Count(p.st.nameKey, p.name.Owners(), res.Owners)
	keep := make([]int, 0, len(p.owner))
	for i, o := range p.owner {
		if o < 0 || containsInt(res.Owners, o) && (res.AllAddresses() || !p.down[i]) {
			keep = append(keep, i)
		}
	}
	return s.subset(keep)
}

func containsInt(list []int, v int) bool {
	for _, l := range list {
		if l == v {
			return true
		}
	}
	return false
}
