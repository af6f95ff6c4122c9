package index

import (
	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"
)

// The CNAME rule. A name with a CNAME has no other data, and has one CNAME (RFC 1034 3.6.2,
// RFC 2181 10.1). The stock plugin answers an A question for a name that holds both a host name
// and an address with the CNAME and the A record side by side, which resolvers reject or
// misread. Writers keep such a name to the older claim (plan.cnameRule), but etcd may hold
// anything: two writers in a race, a key written by hand or by external-dns. So the index
// applies the same rule to every answer set it serves A, AAAA, TXT and CNAME questions from:
//
//   - the records that answer with a CNAME (a host that is a name, no text) form one side, the
//     others (addresses, text) the other;
//   - the side whose oldest key was created first (etcd create revision) keeps the name; at
//     equal revisions (one transaction) the other data does;
//   - of the CNAMEs, only the oldest key's answers (the first in key order among equals).
//
// Sets without a clash, nearly all of them, are served as they are, at no cost per question.
// SRV and MX answers are left as the stock plugin gives them: there a host name is a target,
// not a CNAME.

// ruledSet is what the rule keeps of a set with a clash, and the create revisions that a
// query-wildcard subset of the set needs to apply the rule again.
type ruledSet struct {
	set     *answerSet
	created []int64 // by position in the full set
}

// ruledQuestion says whether the rule applies to answers of qtype.
func ruledQuestion(qtype uint16) bool {
	switch qtype {
	case dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeCNAME:
		return true
	}
	return false
}

// forQuestion is the set that answers qtype.
func (s *answerSet) forQuestion(qtype uint16) *answerSet {
	if r := s.ruled(); r != nil && ruledQuestion(qtype) {
		return r.set
	}
	return s
}

// applyCNAMERule sets s.ruled when s has a clash; created gives each record's create revision.
func (s *answerSet) applyCNAMERule(created func(i int) int64) {
	keep := cnameRule(s.services, created)
	if keep == nil {
		return
	}
	revs := make([]int64, len(s.services))
	for i := range revs {
		revs[i] = created(i)
	}
	if s.rare == nil {
		s.rare = &rareParts{}
	}
	s.rare.ruled = &ruledSet{set: s.subset(keep), created: revs}
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

// cnameRule returns the positions of sx that the rule keeps, ascending, or nil when it keeps
// them all.
func cnameRule(sx []msg.Service, created func(i int) int64) []int {
	oldestCNAME, oldestData := -1, -1
	for i := range sx {
		if what, _ := sx[i].HostType(); what == dns.TypeCNAME {
			if oldestCNAME < 0 || created(i) < created(oldestCNAME) {
				oldestCNAME = i
			}
		} else if oldestData < 0 || created(i) < created(oldestData) {
			oldestData = i
		}
	}
	if oldestCNAME < 0 {
		return nil // no CNAME: nothing to rule on
	}
	var keep []int
	clash := false
	if oldestData >= 0 && created(oldestData) <= created(oldestCNAME) {
		// The other data is older: every CNAME goes.
		for i := range sx {
			if what, _ := sx[i].HostType(); what != dns.TypeCNAME {
				keep = append(keep, i)
			} else {
				clash = true
			}
		}
	} else {
		// The oldest CNAME keeps the name alone: other data and other CNAMEs go, and so does a
		// second key with the same target (one CNAME record, not two copies of it).
		clash = len(sx) > 1
		keep = []int{oldestCNAME}
	}
	if !clash {
		return nil
	}
	return keep
}
