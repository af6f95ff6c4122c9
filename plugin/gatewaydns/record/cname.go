package record

// The CNAME rule: a name with a CNAME has no other data, and has one CNAME (RFC 1034 3.6.2,
// RFC 2181 10.1). Etcd may hold anything (two writers in a race, a key written by hand or by
// external-dns), so every path decides who keeps a name with the one function here:
//
//   - the server (package index), on the records etcd holds, per kind of question;
//   - a writer (package plan), on the records etcd holds plus the ones it would write, to tell
//     beforehand what the server will answer, and withdraw with a Conflict when it would lose;
//   - the sources of one writer (package source), on the objects that ask for a name.
//
// The rule: of the records that take part, the first claim decides. When it is a CNAME, that
// CNAME keeps the name alone; when it is other data, every CNAME goes. Each path says what
// counts as age: the server and the writers an etcd create revision (a record not yet written
// is the youngest), the sources an object's creationTimestamp. At equal ages the other data
// wins (one transaction wrote both), and among CNAMEs of equal age the first in the caller's
// order.

// Part is what a record is to the CNAME rule in the answers to one kind of question.
type Part uint8

const (
	// Beside: the record takes no part, and is kept whatever the rule decides.
	Beside Part = iota
	// Data: data a CNAME cannot share its name with.
	Data
	// Alias: a CNAME.
	Alias
	// Out: left out whatever the ages (an SRV or MX target beside other data, see PartOf).
	Out
)

// Question is the kind of question an answer is ruled for.
type Question uint8

const (
	// AddressQuestion: A, AAAA and CNAME questions. Text takes no part: external-dns's TXT
	// registry records of its older format sit beside its CNAMEs and must not take them away.
	AddressQuestion Question = iota
	// TextQuestion: TXT questions. Addresses take no part.
	TextQuestion
)

// PartOf is the part of a record of kind k in the answers to q. An SRV or MX target (Target)
// is no CNAME, but the stock plugin answers it to A, AAAA and TXT questions as a CNAME to its
// target: the rule keeps that only in a set of such records alone (onlyTargets: an SRV name
// like _sip._tcp.example.com), where they are ruled as CNAMEs; beside any other data they are
// left out, so that an MX beside a name's addresses or its SPF text does not turn the name
// into a CNAME. SRV and MX answers are not ruled: there a host name is a target.
func PartOf(q Question, k AnswerKind, onlyTargets bool) Part {
	switch k {
	case CNAME:
		return Alias
	case Target:
		if onlyTargets {
			return Alias
		}
		return Out
	case Address:
		if q == AddressQuestion {
			return Data
		}
	case Text:
		if q == TextQuestion {
			return Data
		}
	}
	return Beside
}

// Ruling is what the CNAME rule decided for one set of records.
type Ruling struct {
	// Winner is the position of the claim that keeps the name (the oldest CNAME, or the oldest
	// other data when a CNAME meets it), -1 when no CNAME meets other data or a second CNAME.
	Winner int
	// AliasWins: the winner is a CNAME, which keeps the name alone.
	AliasWins bool
	// LeavesOut: the rule leaves some record out; false for nearly every set, which is then
	// answered as it is.
	LeavesOut bool
}

// RuleCNAME decides who keeps a name among n records, given each one's part and older(i, j),
// which compares the ages of i and j (negative: i is older; 0: equal). Only records of the same
// part are compared, then the oldest CNAME with the oldest other data. It allocates nothing.
func RuleCNAME(n int, part func(i int) Part, older func(i, j int) int) Ruling {
	alias, data, aliases, out := -1, -1, 0, false
	for i := range n {
		switch part(i) {
		case Alias:
			aliases++
			if alias < 0 || older(i, alias) < 0 {
				alias = i
			}
		case Data:
			if data < 0 || older(i, data) < 0 {
				data = i
			}
		case Out:
			out = true
		}
	}
	r := Ruling{Winner: -1, LeavesOut: out}
	switch {
	case alias < 0 || (data < 0 && aliases == 1):
		// no CNAME, or one alone: nothing to decide
	case data >= 0 && older(data, alias) <= 0:
		r.Winner, r.LeavesOut = data, true
	default:
		r.Winner, r.AliasWins, r.LeavesOut = alias, true, true
	}
	return r
}

// Keeps reports whether the rule keeps record i, of part p, in the answer.
func (r Ruling) Keeps(i int, p Part) bool {
	switch p {
	case Out:
		return false
	case Alias:
		return r.Winner < 0 || (r.AliasWins && i == r.Winner)
	case Data:
		return !r.AliasWins
	}
	return true
}

// Answered reports whether the answer of record i, of part p, is given: it is kept, or it is a
// CNAME to the target of the CNAME that is (sameTarget(i, j): i and j point to one name). A
// writer that shares a CNAME with another owner has its answer given by the other's record.
func (r Ruling) Answered(i int, p Part, sameTarget func(i, j int) bool) bool {
	if r.Keeps(i, p) {
		return true
	}
	return p == Alias && r.AliasWins && sameTarget(i, r.Winner)
}
