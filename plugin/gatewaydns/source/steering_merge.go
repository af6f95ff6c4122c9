package source

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// A cluster publishes a name with one policy: its share, tier and check among the clusters.
// When several of its objects (or entries of one DNSEndpoint) publish the name, each field is
// that of the oldest that sets it (Merge's age order: creationTimestamp, then kind, namespace
// and name; a DNSEndpoint's entries in their order). An object that sets nothing takes no
// part: a route that only adds a path to a name leaves its policy alone. One that sets a field
// to another value loses that field, and is reported, as a CNAME that loses is.

// policyFieldNames name the fields of a Policy in a conflict's reason.
var policyFieldNames = [...]string{"weight", "priority", "health check"}

// policyMerge combines policies field by field, the first to set a field deciding.
type policyMerge struct {
	p  Policy
	by [len(policyFieldNames)]int // who set each field: an index of the caller's, -1 for none
}

func newPolicyMerge() policyMerge {
	return policyMerge{by: [len(policyFieldNames)]int{-1, -1, -1}}
}

// clash is a field that a policy set to another value than the one that decides it.
type clash struct {
	field     int // into policyFieldNames
	got, kept string
	by        int // who set the kept value
}

// add adds the policy q of who, and returns the fields it sets otherwise than who came before.
func (m *policyMerge) add(who int, q Policy) []clash {
	var out []clash
	take := func(f int, set, same bool, got, kept func() string, copyField func()) {
		switch {
		case !set:
		case m.by[f] < 0:
			copyField()
			m.by[f] = who
		case !same:
			out = append(out, clash{field: f, got: got(), kept: kept(), by: m.by[f]})
		}
	}
	take(0, q.HasWeight, q.Weight == m.p.Weight,
		func() string { return strconv.Itoa(q.Weight) }, func() string { return strconv.Itoa(m.p.Weight) },
		func() { m.p.Weight, m.p.HasWeight = q.Weight, true })
	take(1, q.HasPriority, q.Priority == m.p.Priority,
		func() string { return strconv.Itoa(q.Priority) }, func() string { return strconv.Itoa(m.p.Priority) },
		func() { m.p.Priority, m.p.HasPriority = q.Priority, true })
	take(2, q.HealthCheck != "", q.HealthCheck == m.p.HealthCheck,
		func() string { return q.HealthCheck }, func() string { return m.p.HealthCheck },
		func() { m.p.HealthCheck = q.HealthCheck })
	return out
}

// describeClashes says what a policy lost, naming who set the kept value.
func describeClashes(cs []clash, setter func(by int) string) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s %s differs from %s %s", policyFieldNames[c.field], c.got, policyFieldNames[c.field], c.kept)
		if s := setter(c.by); s != "" {
			parts[i] += " (set by " + s + ")"
		}
	}
	return "steering: " + strings.Join(parts, "; ")
}

// steering is the policy of the name's published claims (won, in age order), each field that
// of the oldest claim that sets it; a published claim of another object that sets a field
// otherwise is reported.
func (m *merging) steering(won []bool) record.Steering {
	pm := newPolicyMerge()
	for i, c := range m.order {
		if !won[i] || len(c.Targets) == 0 {
			continue
		}
		cs := pm.add(i, c.Policy)
		// An object's claims on a name agree (they are combined per object first): a clash
		// with itself is an earlier claim of Merge's, already reported.
		cs = slices.DeleteFunc(cs, func(x clash) bool { return m.order[x.by].Source == c.Source })
		if len(cs) > 0 {
			m.add(Rejection{Object: c.Source, Hostname: m.name, Cause: CauseConflict,
				Reason: describeClashes(cs, func(by int) string { return m.order[by].Source.String() + ", the oldest object that sets it" }) +
					"; a cluster publishes a name with one policy"})
		}
	}
	return pm.p.Steering()
}

// agreeOnPolicy gives the claims of one DNSEndpoint on one name (claims sorted by name, the
// entries of a name in their order) one policy, field by field from the first entry that sets
// it, over the DNSEndpoint's own (base), reporting an entry that sets a field otherwise. Two
// entries of one name with weights of their own (external-dns's weighted records of one
// cluster, told apart by setIdentifier) cannot split a cluster's share among themselves.
func agreeOnPolicy(claims []Claim, entries []string, base Policy, rs *rejections) {
	for i := 0; i < len(claims); {
		j, pm := i, newPolicyMerge()
		for ; j < len(claims) && claims[j].Name == claims[i].Name; j++ {
			if cs := pm.add(j, claims[j].Policy); len(cs) > 0 {
				rs.add(claims[j].Name, CauseConflict, describeClashes(cs, func(by int) string { return entries[by] })+
					fmt.Sprintf(" in %s; a cluster publishes a name with one policy: the first entry's holds", entries[j]))
			}
		}
		p := pm.p.over(base)
		for k := i; k < j; k++ {
			if len(claims[k].Targets) > 0 {
				claims[k].Policy = p
			}
		}
		i = j
	}
}
