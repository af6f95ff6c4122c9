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
// endpoint is the smallest non-zero TTL of the claims it publishes.
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

// mergeName merges the claims on one name; ok is false when no claim has a target.
func mergeName(name string, claims []Claim) (ep record.Endpoint, ok bool, rej []Rejection) {
	order := slices.Clone(claims)
	slices.SortFunc(order, compareAge)

	seen := map[Rejection]struct{}{}
	conflict := func(c Claim, reason string) {
		r := Rejection{Object: c.Source, Hostname: name, Cause: CauseConflict, Reason: reason}
		if _, dup := seen[r]; !dup {
			seen[r] = struct{}{}
			rej = append(rej, r)
		}
	}

	ips := map[string]struct{}{}
	var ipHolder *Claim // the oldest claim with an A/AAAA target
	for i := range order {
		for _, t := range order[i].Targets {
			if isIPTarget(t) {
				ips[t] = struct{}{}
				if ipHolder == nil {
					ipHolder = &order[i]
				}
			}
		}
	}

	typed := map[string]record.Typed{}
	var typedHolder *Claim // the oldest claim with a typed record
	for i := range order {
		for _, r := range order[i].Records {
			typed[r.String()] = r
			if typedHolder == nil {
				typedHolder = &order[i]
			}
		}
	}

	var winners []Claim
	if len(ips) > 0 || len(typed) > 0 {
		for _, c := range order {
			published := len(c.Records) > 0
			for _, t := range c.Targets {
				switch {
				case isIPTarget(t):
					published = true
				case ipHolder != nil:
					conflict(c, fmt.Sprintf("CNAME target %s conflicts with the A/AAAA records of the name (from %s); a CNAME cannot share its name", t, ipHolder.Source))
				default:
					conflict(c, fmt.Sprintf("CNAME target %s conflicts with the %s records of the name (from %s); a CNAME cannot share its name", t, typedTypes(typed), typedHolder.Source))
				}
			}
			if published {
				winners = append(winners, c)
			}
		}
		ep.Targets = sortedSet(ips)
		if len(typed) > 0 {
			ep.Records = record.SortTyped(slices.Collect(maps.Values(typed)))
		}
	} else {
		var cname string
		var holder record.ObjectRef
		for _, c := range order {
			if len(c.Targets) > 0 {
				cname, holder = slices.Min(c.Targets), c.Source
				break
			}
		}
		if cname == "" {
			return record.Endpoint{}, false, nil
		}
		for _, c := range order {
			published := false
			for _, t := range c.Targets {
				if t == cname {
					published = true
				} else {
					conflict(c, fmt.Sprintf("CNAME target %s conflicts with CNAME target %s (from %s, the oldest claim); a CNAME has one target", t, cname, holder))
				}
			}
			if published {
				winners = append(winners, c)
			}
		}
		ep.Targets = []string{cname}
	}

	ep.Name = name
	for _, c := range winners {
		ep.TTL = minTTL(ep.TTL, c.TTL)
		ep.Sources = append(ep.Sources, c.Source)
	}
	slices.SortFunc(ep.Sources, compareRefs)
	ep.Sources = slices.Compact(ep.Sources)
	slices.SortFunc(rej, compareRejections)
	return ep, true, rej
}

// typedTypes lists the record types among records, e.g. "MX/TXT".
func typedTypes(records map[string]record.Typed) string {
	set := map[string]struct{}{}
	for _, r := range records {
		set[r.Type] = struct{}{}
	}
	return strings.Join(sortedSet(set), "/")
}
