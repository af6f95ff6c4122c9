package plan

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// The CNAME rule across owners, in shared and exclusive mode alike (record.RuleCNAME): the
// plan rules on the records the name will hold once its change is applied, as the server will
// (package index), and withdraws with a Conflict when the server would not give an answer we
// want. The age of a record is its key's create revision; a key not yet written is younger than
// all, and an own key about to be deleted takes no part, so a writer that turns a name's
// addresses into a CNAME has the age of its new key, not of the addresses it drops.
//
// What we want answered: our addresses and our CNAME to A, AAAA and CNAME questions, our text
// to TXT questions. A CNAME that older text hides from TXT questions still answers A questions
// (text takes no part there: external-dns's registry records sit beside CNAMEs), and SRV and
// MX answers are not ruled, so neither loses the name.

// ruled is one record of the name to the CNAME rule.
type ruled struct {
	key     string
	value   []byte
	created int64 // math.MaxInt64: not written yet
	kind    record.AnswerKind
	target  string // a CNAME's target, normalized
	ours    bool
}

// cnameConflict is the Conflict of a name whose wanted answers the server would not give under
// the CNAME rule.
func cnameConflict(owner string, n nameInput, h held, want map[string]Put) (Conflict, bool) {
	rs := ruledRecords(n, h, want)
	for _, q := range []record.Question{record.AddressQuestion, record.TextQuestion} {
		if loser, winner, lost := ruleOn(rs, q); lost {
			return conflictWith(n.name, rs[loser], rs[winner]), true
		}
	}
	return Conflict{}, false
}

// ruledRecords are the records of the name once its change is applied: the keys of others,
// our keys that stay, and the keys we would write, in that order. A value no reader can serve
// takes no part.
func ruledRecords(n nameInput, h held, want map[string]Put) []ruled {
	rs := make([]ruled, 0, len(n.cur)+len(want))
	add := func(key string, value []byte, created int64, ours bool) {
		v, err := record.Decode(key, value)
		if err != nil {
			return
		}
		r := ruled{key: key, value: value, created: created, kind: record.KindOf(&v.Service), ours: ours}
		if r.kind == record.CNAME {
			r.target = record.NormalizeName(v.Host)
		}
		rs = append(rs, r)
	}
	for _, kv := range n.cur {
		_, own := h.own[kv.Key]
		if put, wanted := want[kv.Key]; own && wanted {
			add(kv.Key, put.Value, kv.CreateRevision, true)
		} else if !own {
			add(kv.Key, kv.Value, kv.CreateRevision, false)
		}
	}
	for _, k := range sortedKeys(want) {
		if _, own := h.own[k]; !own {
			add(k, want[k].Value, math.MaxInt64, true)
		}
	}
	return rs
}

// ruleOn applies the rule to the answers to q: lost when one of our records that answers q is
// not answered, to the record at winner.
func ruleOn(rs []ruled, q record.Question) (loser, winner int, lost bool) {
	onlyTargets := !slices.ContainsFunc(rs, func(r ruled) bool { return r.kind != record.Target })
	part := func(i int) record.Part { return record.PartOf(q, rs[i].kind, onlyTargets) }
	older := func(i, j int) int { return cmp.Compare(rs[i].created, rs[j].created) }
	sameTarget := func(i, j int) bool { return rs[i].target == rs[j].target }
	r := record.RuleCNAME(len(rs), part, older)
	if r.Winner < 0 || rs[r.Winner].ours {
		// Nothing decided, or for us: our own records never mix a CNAME with other data
		// (source.Merge).
		return 0, 0, false
	}
	for i := range rs {
		if rs[i].ours && answers(q, rs[i].kind) && !r.Answered(i, part(i), sameTarget) {
			return i, r.Winner, true
		}
	}
	return 0, 0, false
}

// answers reports whether a record of kind k is one we want answered to questions q.
func answers(q record.Question, k record.AnswerKind) bool {
	if q == record.TextQuestion {
		return k == record.Text
	}
	return k == record.Address || k == record.CNAME
}

// conflictWith is the Conflict of our record that loses to the winner's, with a detail that
// says what the winner holds.
func conflictWith(name string, ours, winner ruled) Conflict {
	holder := record.OwnerOf(winner.value)
	who := "owner " + holder
	if holder == "" {
		who = "a key without owner (" + winner.key + ")"
	}
	var detail string
	switch {
	case ours.kind == record.CNAME && winner.kind != record.CNAME:
		detail = fmt.Sprintf("a CNAME cannot share its name with other data, and %s has %s there since revision %d", who, dataName(winner.kind), winner.created)
	case ours.kind != record.CNAME:
		detail = fmt.Sprintf("the name is a CNAME to %s of %s since revision %d, and a CNAME cannot share its name with %s", winner.target, who, winner.created, dataName(ours.kind))
	default:
		detail = fmt.Sprintf("the name is a CNAME to %s of %s since revision %d, and a name has one CNAME", winner.target, who, winner.created)
	}
	return Conflict{Name: name, Winner: holder, WinnerRevision: winner.created, Detail: detail}
}

// dataName names data of kind k for a Conflict's detail.
func dataName(k record.AnswerKind) string {
	if k == record.Text {
		return "text"
	}
	return "addresses"
}
