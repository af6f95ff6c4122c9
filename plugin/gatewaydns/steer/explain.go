package steer

import (
	"fmt"
	"strconv"
	"strings"
)

// Why is why an owner was left out of an answer (Answered: it was not).
type Why uint8

const (
	Answered Why = iota
	// WhyDown: its health check holds every address down.
	WhyDown
	// WhyDrained: weight 0, and another owner is eligible.
	WhyDrained
	// WhyNotLocal: the client's own cluster is an eligible owner, and answers alone.
	WhyNotLocal
	// WhyOtherRegion: eligible owners of the client's region answer.
	WhyOtherRegion
	// WhyLowerTier: an owner of a lower priority (an earlier tier) is eligible.
	WhyLowerTier
	// WhyNotDrawn: the draw by weight chose another owner of its tier for this question.
	WhyNotDrawn
)

// Report is one owner as explain shows it.
type Report struct {
	Owner    string
	Region   string
	Weight   int
	Weighted bool
	Priority int
	Check    string // the health check, "" for none
	Addrs    int
	Down     int
	Why      Why
	// Detail says in words why the owner is in or out, e.g. "drawn, weight 90 of 100 in
	// tier 0", "left out: priority 1, tier 0 answers".
	Detail string
}

// Health is the owner's health in words: "not checked", "up", "down", or "2 of 3 up".
func (r Report) Health() string {
	switch {
	case r.Check == "":
		return "not checked"
	case r.Down == 0:
		return "up"
	case r.Down >= r.Addrs:
		return "down"
	}
	return fmt.Sprintf("%d of %d up", r.Addrs-r.Down, r.Addrs)
}

// String is the report as one TXT string of explain, e.g.
// "owner eu1: weight 90, priority 0, health up (tcp://:443): answered, drawn, weight 90 of 100 in tier 0".
func (r Report) String() string {
	var b strings.Builder
	b.WriteString("owner " + r.Owner)
	if r.Region != "" {
		b.WriteString(" (region " + r.Region + ")")
	}
	b.WriteString(": weight ")
	if r.Weighted {
		b.WriteString(strconv.Itoa(r.Weight))
	} else {
		b.WriteString("none")
	}
	b.WriteString(", priority " + strconv.Itoa(r.Priority) + ", health " + r.Health())
	if r.Check != "" {
		b.WriteString(" (" + r.Check + ")")
	}
	b.WriteString(": " + r.Detail)
	return b.String()
}

// Explain is Choose with a report of every owner, in their order. It allocates; it is for
// explain, not for answers.
func (n *Name) Explain(c Client, rnd uint64) (Result, []Report) {
	owners := n.owners
	why := make([]Why, len(owners))
	res := decide(owners, c, rnd, make([]int, 0, len(owners)), why)
	var total uint64
	if res.Rule == RuleWeighted {
		for i := range owners { // the owners of the draw: answered, or not drawn
			if why[i] == Answered || why[i] == WhyNotDrawn {
				total += owners[i].weight()
			}
		}
	}
	reports := make([]Report, len(owners))
	for i := range owners {
		o := &owners[i]
		r := Report{Owner: o.ID, Region: o.Region, Weight: o.Steering.Weight, Weighted: o.Steering.Weighted,
			Priority: o.Steering.Priority, Check: o.Steering.HealthCheck, Addrs: o.Addrs, Down: o.Down, Why: why[i]}
		r.Detail = detail(o, r.Why, res, c, total)
		reports[i] = r
	}
	return res, reports
}

// detail says why the owner o is in or out of the answer res.
func detail(o *Owner, why Why, res Result, c Client, total uint64) string {
	switch why {
	case WhyDown:
		return "left out: every address fails its health check"
	case WhyDrained:
		return "left out: weight 0, answered only when no other owner is eligible"
	case WhyNotLocal:
		return "left out: the client's own cluster " + c.Owner + " answers"
	case WhyOtherRegion:
		return "left out: owners of the client's region " + c.Region + " answer"
	case WhyLowerTier:
		return fmt.Sprintf("left out: priority %d, tier %d answers", o.Steering.Priority, res.Tier)
	case WhyNotDrawn:
		return fmt.Sprintf("left out: not drawn this time, weight %d of %d in tier %d", o.weight(), total, res.Tier)
	}
	var s string
	switch res.Rule {
	case RuleFailOpen:
		return "answered, failing open: no owner is eligible, so every owner answers with every address"
	case RuleLocal:
		s = "answered: the client's own cluster"
	case RuleWeighted:
		s = fmt.Sprintf("answered: drawn, weight %d of %d in tier %d", o.weight(), total, res.Tier)
	default:
		s = fmt.Sprintf("answered: tier %d, without weights every owner of it", res.Tier)
	}
	if res.Region {
		s += ", in the client's region " + c.Region
	}
	if o.Down > 0 {
		s += fmt.Sprintf(" (%d address(es) left out, failing the health check)", o.Down)
	}
	return s
}
