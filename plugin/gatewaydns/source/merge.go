package source

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Merge merges the claims of all objects into endpoints, one per name, sorted by name. On each
// name, A/AAAA targets are unioned and sorted, and so are TXT, SRV and MX records. A CNAME
// has no other data and one target (RFC 1034 3.6.2), so a host-name target beside A/AAAA
// targets or typed records loses to them, and of differing host-name targets the one of the oldest
// claim (creationTimestamp, then kind, namespace, name; the first in sort order within one
// claim) wins. Every losing target is reported on the object that asked for it. The TTL of an
// endpoint is the smallest non-zero TTL of the claims it publishes; its steering policy, field
// by field, that of the oldest claim it publishes that sets the field (steering_merge.go).
func Merge(claims []Claim) ([]record.Endpoint, []Rejection) {
	byName := map[string][]Claim{}
	for _, c := range claims {
		byName[c.Name] = append(byName[c.Name], c)
	}
	var (
		eps []record.Endpoint
		rej []Rejection
	)
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		ep, ok, r := mergeName(name, byName[name])
		if ok {
			eps = append(eps, ep)
		}
		rej = append(rej, r...)
	}
	slices.SortFunc(rej, compareRejections)
	return eps, rej
}

// compareAge orders claims oldest first, ties broken by kind, namespace and name.
func compareAge(a, b Claim) int {
	return cmp.Or(a.Created.Compare(b.Created), compareRefs(a.Source, b.Source))
}

// asked is one thing a claim asks of its name: a target (an IP address, or a host name: a
// CNAME) or a typed record.
type asked struct {
	claim  int // in age order
	target string
	typed  *record.Typed
}

func (a asked) address() bool { return a.typed == nil && isIPTarget(a.target) }

func (a asked) part() record.Part {
	if a.typed == nil && !isIPTarget(a.target) {
		return record.Alias
	}
	return record.Data
}

// mergeName merges the claims on one name; ok is false when no claim has a target. The CNAME
// rule (record.RuleCNAME) decides who keeps the name. Within one cluster a name's addresses
// and typed records always keep it against a host name (the sources spec): to the rule, no
// CNAME claim is older than a data claim. Of host names, the oldest claim's, and of one
// claim's, the first in sort order.
func mergeName(name string, claims []Claim) (ep record.Endpoint, ok bool, rej []Rejection) {
	order := slices.Clone(claims)
	slices.SortFunc(order, compareAge)
	all := askedOf(order)
	if len(all) == 0 {
		return record.Endpoint{}, false, nil
	}
	part := func(i int) record.Part { return all[i].part() }
	rule := record.RuleCNAME(len(all), part, func(i, j int) int {
		if part(i) != part(j) {
			return 0
		}
		return compareAge(order[all[i].claim], order[all[j].claim])
	})
	sameTarget := func(i, j int) bool { return all[i].target == all[j].target }

	m := merging{name: name, order: order, all: all, seen: map[Rejection]struct{}{}}
	won := make([]bool, len(order))
	for i, a := range all {
		if rule.Answered(i, part(i), sameTarget) {
			m.publish(a)
			won[a.claim] = true
		} else {
			m.reject(a, rule)
		}
	}
	ep = m.endpoint()
	ep.Steering = m.steering(won)
	for i, c := range order {
		if won[i] {
			ep.TTL = minTTL(ep.TTL, c.TTL)
			ep.Sources = append(ep.Sources, c.Source)
		}
	}
	slices.SortFunc(ep.Sources, compareRefs)
	ep.Sources = slices.Compact(ep.Sources)
	slices.SortFunc(m.rej, compareRejections)
	return ep, true, m.rej
}

// askedOf is everything the claims, in age order, ask of their name: each claim's targets in
// sort order, then its typed records.
func askedOf(order []Claim) []asked {
	var all []asked
	for i, c := range order {
		for _, t := range slices.Sorted(slices.Values(c.Targets)) {
			all = append(all, asked{claim: i, target: t})
		}
		for j := range c.Records {
			all = append(all, asked{claim: i, typed: &c.Records[j]})
		}
	}
	return all
}

// merging is a name's endpoint in the making: what is published of it, and the rejections.
type merging struct {
	name    string
	order   []Claim
	all     []asked
	targets map[string]struct{}
	typed   map[string]record.Typed
	rej     []Rejection
	seen    map[Rejection]struct{}
}

func (m *merging) publish(a asked) {
	if a.typed != nil {
		if m.typed == nil {
			m.typed = map[string]record.Typed{}
		}
		m.typed[a.typed.String()] = *a.typed
		return
	}
	if m.targets == nil {
		m.targets = map[string]struct{}{}
	}
	m.targets[a.target] = struct{}{}
}

// reject reports the host name a lost to the rule's winner, once per object.
func (m *merging) reject(a asked, rule record.Ruling) {
	winner := m.all[rule.Winner]
	from := func(a asked) record.ObjectRef { return m.order[a.claim].Source }
	var reason string
	if winner.part() == record.Alias {
		reason = fmt.Sprintf("CNAME target %s conflicts with CNAME target %s (from %s, the oldest claim); a CNAME has one target", a.target, winner.target, from(winner))
	} else if i := slices.IndexFunc(m.all, asked.address); i >= 0 { // the oldest address
		reason = fmt.Sprintf("CNAME target %s conflicts with the A/AAAA records of the name (from %s); a CNAME cannot share its name", a.target, from(m.all[i]))
	} else {
		reason = fmt.Sprintf("CNAME target %s conflicts with the %s records of the name (from %s); a CNAME cannot share its name", a.target, m.typedTypes(), from(winner))
	}
	m.add(Rejection{Object: m.order[a.claim].Source, Hostname: m.name, Cause: CauseConflict, Reason: reason})
}

func (m *merging) add(r Rejection) {
	if _, dup := m.seen[r]; !dup {
		m.seen[r] = struct{}{}
		m.rej = append(m.rej, r)
	}
}

// endpoint is the name's endpoint: its targets sorted, its typed records in record order.
func (m *merging) endpoint() record.Endpoint {
	ep := record.Endpoint{Name: m.name, Targets: sortedSet(m.targets)}
	if len(m.typed) > 0 {
		ep.Records = record.SortTyped(slices.Collect(maps.Values(m.typed)))
	}
	return ep
}

// typedTypes lists the record types the claims ask for, e.g. "MX/TXT".
func (m *merging) typedTypes() string {
	set := map[string]struct{}{}
	for _, a := range m.all {
		if a.typed != nil {
			set[a.typed.Type] = struct{}{}
		}
	}
	return strings.Join(sortedSet(set), "/")
}
