package index

import (
	"cmp"
	"slices"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// The CNAME rule (record.RuleCNAME) applied to the answers the server gives: writers keep a
// name to the older claim with the same rule (package plan), but etcd may hold anything, so
// the index rules every set it answers from, per kind of question (record.Question): A, AAAA
// and CNAME questions see the CNAMEs against the addresses, TXT questions the CNAMEs against
// the text. Of a key's claim on the name, its create revision is the age; at equal revisions
// the other data answers, and of CNAMEs of one revision the first the set holds. Sets without a
// clash, nearly all of them, are served as they are, at no cost per question. SRV and MX
// answers are left as the stock plugin gives them: there a host name is a target, not a CNAME.

// ruledSets are what the rule keeps of a set with a clash, per kind of question.
type ruledSets struct {
	address *answerSet // for A, AAAA and CNAME questions; nil: no clash there
	text    *answerSet // for TXT questions; nil: no clash there
}

// forQuestion is the set that answers qtype.
func (s *answerSet) forQuestion(qtype uint16) *answerSet {
	if s.rare == nil || s.rare.ruled == nil {
		return s
	}
	r := s.rare.ruled
	switch qtype {
	case dns.TypeA, dns.TypeAAAA, dns.TypeCNAME:
		if r.address != nil {
			return r.address
		}
	case dns.TypeTXT:
		if r.text != nil {
			return r.text
		}
	}
	return s
}

// applyCNAMERule sets the ruled sets of s where s has a clash; created gives each record's
// create revision.
func (s *answerSet) applyCNAMERule(created func(i int) int64) {
	var buf [8]record.AnswerKind // most sets are smaller: then ruling allocates nothing
	kinds := buf[:0]
	for i := range s.services {
		kinds = append(kinds, record.KindOf(&s.services[i]))
	}
	address := cnameRule(kinds, created, record.AddressQuestion)
	text := cnameRule(kinds, created, record.TextQuestion)
	if address == nil && text == nil {
		return
	}
	r := &ruledSets{}
	if address != nil {
		r.address = s.ruledSubset(address)
	}
	if text != nil {
		r.text = s.ruledSubset(text)
	}
	if s.rare == nil {
		s.rare = &rareParts{}
	}
	s.rare.ruled = r
}

// subset is a new set of the records at positions keep (ascending), leases and all.
func (s *answerSet) subset(keep []int) *answerSet {
	out := &answerSet{services: make([]msg.Service, 0, len(keep))}
	for _, i := range keep {
		if lr, ok := s.leasedAt(i); ok {
			lr.pos = len(out.services)
			out.addLeased(lr)
		}
		if s.services[i].Host == "" {
			out.hostless = true
		}
		out.services = append(out.services, s.services[i])
	}
	return out
}

// ruledSubset is subset for the CNAME rule: with the steering of the records kept.
func (s *answerSet) ruledSubset(keep []int) *answerSet {
	out := s.subset(keep)
	if s.rare != nil {
		out.setSteering(s.rare.steer.subset(keep))
	}
	return out
}

// cnameRule returns the positions of the records of the given kinds that the rule keeps in
// answers to q, ascending, or nil when it keeps them all.
func cnameRule(kinds []record.AnswerKind, created func(i int) int64, q record.Question) []int {
	onlyTargets := !slices.ContainsFunc(kinds, func(k record.AnswerKind) bool { return k != record.Target })
	part := func(i int) record.Part { return record.PartOf(q, kinds[i], onlyTargets) }
	older := func(i, j int) int { return cmp.Compare(created(i), created(j)) }
	r := record.RuleCNAME(len(kinds), part, older)
	if !r.LeavesOut {
		return nil
	}
	keep := make([]int, 0, len(kinds))
	for i := range kinds {
		if r.Keeps(i, part(i)) {
			keep = append(keep, i)
		}
	}
	return keep
}
