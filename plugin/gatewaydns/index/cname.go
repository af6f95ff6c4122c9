package index

import (
	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// The CNAME rule. A name with a CNAME has no other data, and has one CNAME (RFC 1034 3.6.2,
// RFC 2181 10.1). The stock plugin answers an A question for a name that holds both a host name
// and an address with the CNAME and the A record side by side, which resolvers reject or
// misread. Writers keep such a name to the older claim (plan.cnameRule), but etcd may hold
// anything: two writers in a race, a key written by hand or by external-dns. So the index
// applies the same rule to the answers it gives, per kind of question:
//
//   - A, AAAA and CNAME questions: the records that answer with a CNAME (a host that is a name,
//     no text) against the addresses. Text records take no part: they are not in these answers
//     (external-dns's TXT registry records of its older format sit beside its CNAMEs, and must
//     not take the CNAMEs away);
//   - TXT questions: the CNAME records against the text records;
//   - the side whose oldest key was created first (etcd create revision) answers; at equal
//     revisions (one transaction) the other data does;
//   - of the CNAMEs, only the oldest key's answers (the first in key order among equals).
//
// Sets without a clash, nearly all of them, are served as they are, at no cost per question.
// SRV and MX answers are left as the stock plugin gives them: there a host name is a target,
// not a CNAME.
//
// An SRV or MX record with a host-name target (record.Target: a port or "mail") is not a
// CNAME: the stock plugin answers it to A, AAAA and TXT questions as a CNAME to its target
// all the same. The rule keeps that only for a set that holds nothing but such records (an
// SRV name like _sip._tcp.example.com, as the stock plugin answers it, the targets then ruled
// as CNAMEs are); beside any other data (addresses, text, a CNAME) they are left out of A,
// AAAA, CNAME and TXT answers, so that an MX beside a name's addresses or its SPF text
// does not turn the name into a CNAME.

// ruledSets are what the rule keeps of a set with a clash, per kind of question, and the create
// revisions that a query-wildcard subset of the set needs to apply the rule again.
type ruledSets struct {
	address *answerSet // for A, AAAA and CNAME questions; nil: no clash there
	text    *answerSet // for TXT questions; nil: no clash there
	created []int64    // by position in the full set
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
	address := cnameRule(s.services, created, record.Address)
	text := cnameRule(s.services, created, record.Text)
	if address == nil && text == nil {
		return
	}
	r := &ruledSets{created: make([]int64, len(s.services))}
	for i := range r.created {
		r.created[i] = created(i)
	}
	if address != nil {
		r.address = s.subset(address)
	}
	if text != nil {
		r.text = s.subset(text)
	}
	if s.rare == nil {
		s.rare = &rareParts{}
	}
	s.rare.ruled = r
}

// leftOut is the part in the rule of a record that the answer leaves out whatever the ages.
const leftOut record.AnswerKind = 255

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

// cnameRule returns the positions of sx that the rule keeps when CNAMEs meet records of kind
// other, ascending, or nil when it keeps them all.
func cnameRule(sx []msg.Service, created func(i int) int64, other record.AnswerKind) []int {
	targets, rest := 0, 0
	for i := range sx {
		if record.KindOf(&sx[i]) == record.Target {
			targets++
		} else {
			rest++
		}
	}
	// kind is the record's part in this rule: a Target is a CNAME in a set of Targets only,
	// else it is left out.
	kind := func(i int) record.AnswerKind {
		k := record.KindOf(&sx[i])
		if k == record.Target {
			if rest == 0 {
				return record.CNAME
			}
			return leftOut
		}
		return k
	}
	oldestCNAME, oldestOther, cnames := -1, -1, 0
	for i := range sx {
		switch kind(i) {
		case record.CNAME:
			cnames++
			if oldestCNAME < 0 || created(i) < created(oldestCNAME) {
				oldestCNAME = i
			}
		case other:
			if oldestOther < 0 || created(i) < created(oldestOther) {
				oldestOther = i
			}
		}
	}
	if (oldestCNAME < 0 || (oldestOther < 0 && cnames == 1)) && (targets == 0 || rest == 0) {
		return nil // no CNAME, or one CNAME alone, and no Target to leave out: nothing to rule on
	}
	keep := make([]int, 0, len(sx))
	for i := range sx {
		switch k := kind(i); {
		case k == leftOut:
		case oldestCNAME < 0: // only Targets to leave out
			keep = append(keep, i)
		case oldestOther >= 0 && created(oldestOther) <= created(oldestCNAME):
			if k != record.CNAME { // the other data is older: every CNAME goes
				keep = append(keep, i)
			}
		case k == record.CNAME: // the oldest CNAME keeps the name alone
			if i == oldestCNAME {
				keep = append(keep, i)
			}
		case k != other:
			keep = append(keep, i)
		}
	}
	return keep
}
