// Package steer is the rule by which a name that several owners (clusters) publish is
// answered (shared/spec/steering.md), per question, in memory: which owners are eligible (a
// declared health check passing), fail-open when none is, the client's own cluster or region
// first, the lowest failover tier, and within it one owner drawn in proportion to weight. It
// is pure: no I/O, no clock, no global random source (the caller hands in a random number),
// and it allocates nothing on the way of a question.
//
// The caller (the index) groups a name's records by owner into Owners (Group), with each owner's
// record.Steering, its region (Locality.RegionOf) and how many of its addresses a health check
// holds down (healthcheck), and prepares them into a Name when they change (the records, or a
// check's state: healthcheck's Generation moved). It asks the Name's Choose per question,
// Transfer for the zone a secondary gets, and Explain for `dig CH TXT`. It answers the chosen
// owners' addresses, leaving out those held down, unless the result fails open.
package steer

import (
	"math/bits"
	"slices"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Owner is one owner of a name, as a question sees it.
type Owner struct {
	ID     string // the owner id of its records
	Region string // its region (Locality.RegionOf); "" when not known
	// Steering is the owner's policy for the name (record.Value.Steering); zero for none.
	Steering record.Steering
	// Addrs is how many addresses the owner answers for the name; Down how many of them its
	// health check holds down now (healthcheck.Down; Unknown counts as up).
	Addrs, Down int
}

// eligible reports whether the owner has an address not held down.
func (o *Owner) eligible() bool { return o.Down < o.Addrs }

// drained reports whether the owner asks for no share: weight 0, answered only when no other
// owner is eligible.
func (o *Owner) drained() bool { return o.Steering.Weighted && o.Steering.Weight == 0 }

// weight is the owner's share among weighted owners: its weight, or record.DefaultWeight
// when it declares none.
func (o *Owner) weight() uint64 {
	if o.Steering.Weighted {
		return uint64(o.Steering.Weight)
	}
	return record.DefaultWeight
}

// HasPolicy reports whether any owner declares a policy or a health check: a name where none
// does, asked by a client that Locality places nowhere, answers the union of its owners, as it
// did before steering (the caller may skip Choose for it).
func HasPolicy(owners []Owner) bool {
	for i := range owners {
		if !owners[i].Steering.IsZero() {
			return true
		}
	}
	return false
}

// Client is where a question comes from (Locality.Client).
type Client struct {
	Owner  string // the owner id of the client's own cluster; "" when none
	Region string // the client's region; "" when none
}

// Rule is what decided an answer.
type Rule uint8

const (
	// RuleUnion: no weights among the owners left: all of them (a name without policy).
	RuleUnion Rule = iota
	// RuleLocal: the client's own cluster is an eligible owner: it alone.
	RuleLocal
	// RuleWeighted: one owner drawn in proportion to weight.
	RuleWeighted
	// RuleFailOpen: no owner eligible: every owner, every address (a metric and explain say
	// so, as Route 53 answers when every health check fails).
	RuleFailOpen
)

var ruleNames = [...]string{RuleUnion: "union", RuleLocal: "local", RuleWeighted: "weighted", RuleFailOpen: "fail-open"}

func (r Rule) String() string { return ruleNames[r] }

// Result is the owners a question is answered from.
type Result struct {
	// Owners are indexes into the owners given, ascending.
	Owners []int
	Rule   Rule
	// Region: the owners were narrowed to the client's region.
	Region bool
	// Tier is the priority of the owners answered (none when failing open).
	Tier int
}

// AllAddresses reports whether every address of the chosen owners is answered: when failing
// open. Otherwise those a health check holds down are left out.
func (r Result) AllAddresses() bool { return r.Rule == RuleFailOpen }

// Name is the owners of one name, prepared for questions: Prepare works out once what does
// not depend on the client (who is eligible, the answer to a client that locality does not
// place, the transfer's), so that a question costs a draw, or, for a placed client, the steps
// from its locality on. It is immutable: prepare a new one when the owners or their health
// change.
type Name struct {
	owners []Owner
	// anywhere is the answer to a client placed nowhere, but the draw: its Rule, Tier and
	// Owners (for RuleWeighted the owners of the draw, with cumulative weights in cum).
	anywhere Result
	cum      []uint64
	transfer Result
	// places: some owner has a region or an id a client can be placed by (any owner has an
	// id); when a client's region and cluster are none of the owners', it is placed nowhere.
	regions []string
}

// Prepare prepares owners (copied) for questions. It allocates; call it when they change.
func Prepare(owners []Owner) *Name {
	n := &Name{owners: slices.Clone(owners)}
	for i := range n.owners {
		if r := n.owners[i].Region; r != "" && !slices.Contains(n.regions, r) {
			n.regions = append(n.regions, r)
		}
	}
	var words [maskCount]uint64
	m := newMasks(n.owners, Client{}, words[:])
	n.transfer = m.transfer(n.owners, nil)
	res, done := narrow(n.owners, &m, Client{}, nil, nil)
	n.anywhere = res
	if !done {
		n.anywhere, n.cum = m.weights(n.owners, res)
	}
	return n
}

// Owners are the owners the Name was prepared from, in their order: Result.Owners index them.
func (n *Name) Owners() []Owner { return n.owners }

// Choose is the answer to one question for client c, the steps of steering.md:
//
//  1. eligible: owners with an address not held down by a health check; an owner with weight
//     0 is eligible only when no other owner is;
//  2. none eligible: every owner, every address (fail open);
//  3. the client's own cluster alone, when it is eligible; else the eligible owners of its
//     region, when there are any;
//  4. of those, the lowest priority (tier);
//  5. within the tier, one owner drawn in proportion to weight (an owner without a weight
//     counts record.DefaultWeight) when any declares one; the whole tier otherwise.
//
// rnd is a uniformly random number (math/rand/v2.Uint64), which alone decides the draw. The
// chosen owners are appended to dst: with a dst of room enough (a stack array), Choose
// allocates nothing.
func (n *Name) Choose(c Client, rnd uint64, dst []int) Result {
	if n.places(c) {
		return decide(n.owners, c, rnd, dst, nil)
	}
	res := n.anywhere
	res.Owners = dst
	if res.Rule != RuleWeighted {
		res.Owners = append(res.Owners, n.anywhere.Owners...)
		return res
	}
	res.Owners = append(res.Owners, n.anywhere.Owners[Pick(n.cum, rnd)])
	return res
}

// Pick is the position in cum, cumulative weights (ascending, the last their total), that the
// uniformly random number rnd draws: each in proportion to its weight.
func Pick(cum []uint64, rnd uint64) int {
	draw, _ := bits.Mul64(rnd, cum[len(cum)-1]) // uniform in [0, total)
	for i, c := range cum {
		if draw < c {
			return i
		}
	}
	return len(cum) - 1
}

// Anywhere is the choice of a client that locality places nowhere, as Prepare worked it out:
// for a draw by weight (cum not nil) the owners drawn among, with their cumulative weights,
// one of which Choose answers (Pick); otherwise the answer itself. res.Owners must not be
// changed.
func (n *Name) Anywhere() (res Result, cum []uint64) { return n.anywhere, n.cum }

// places reports whether locality may place client c among the owners: its cluster or its
// region is one of theirs.
func (n *Name) places(c Client) bool {
	if c.Region != "" && slices.Contains(n.regions, c.Region) {
		return true
	}
	if c.Owner != "" {
		for i := range n.owners {
			if n.owners[i].ID == c.Owner {
				return true
			}
		}
	}
	return false
}

// Transfer is the answer a secondary holds, which can neither check nor draw nor place a
// client: the eligible owners of the lowest tier (weight 0 only when no other is eligible),
// all of them; every owner when none is eligible. The caller answers their addresses that are
// not held down (all of them when failing open). The owners are appended to dst.
func (n *Name) Transfer(dst []int) Result {
	res := n.transfer
	res.Owners = append(dst, n.transfer.Owners...)
	return res
}
