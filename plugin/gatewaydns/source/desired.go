package source

import (
	"cmp"
	"maps"
	"slices"
	"sync"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Desired holds the claims of every object and the endpoints merged from them, so that a
// change to one object re-merges only the names that object claims (or claimed). It is safe
// for concurrent use.
type Desired struct {
	mu       sync.Mutex
	byObject map[record.ObjectRef][]Claim
	byName   map[string]map[record.ObjectRef]Claim
	merged   map[string]merged
}

type merged struct {
	ep        record.Endpoint
	conflicts []Rejection
}

// NewDesired returns an empty Desired.
func NewDesired() *Desired {
	return &Desired{
		byObject: map[record.ObjectRef][]Claim{},
		byName:   map[string]map[record.ObjectRef]Claim{},
		merged:   map[string]merged{},
	}
}

// Set replaces the claims of the object ref (ref is authoritative: each claim's Source is set
// to it; several claims on one name are combined; the claims are copied) and returns the names
// whose endpoint or conflicts changed, sorted: the caller hands those names' Endpoint (or
// their absence) to the plan and reports their NameConflicts. Set with no claims is Delete.
func (d *Desired) Set(ref record.ObjectRef, claims []Claim) []string {
	byName := map[string]Claim{}
	for _, c := range claims {
		c.Source = ref
		c.Targets = slices.Clone(c.Targets)
		c.Records = slices.Clone(c.Records)
		if prev, ok := byName[c.Name]; ok {
			c.Targets = append(c.Targets, prev.Targets...)
			c.Records = append(c.Records, prev.Records...)
			c.TTL = minTTL(prev.TTL, c.TTL)
		}
		slices.Sort(c.Targets)
		c.Targets = slices.Compact(c.Targets)
		c.Records = record.SortTyped(c.Records)
		byName[c.Name] = c
	}
	next := slices.Collect(maps.Values(byName))
	slices.SortFunc(next, func(a, b Claim) int { return cmp.Compare(a.Name, b.Name) })

	d.mu.Lock()
	defer d.mu.Unlock()
	touched := map[string]struct{}{}
	for _, c := range d.byObject[ref] {
		touched[c.Name] = struct{}{}
		delete(d.byName[c.Name], ref)
		if len(d.byName[c.Name]) == 0 {
			delete(d.byName, c.Name)
		}
	}
	for _, c := range next {
		touched[c.Name] = struct{}{}
		if d.byName[c.Name] == nil {
			d.byName[c.Name] = map[record.ObjectRef]Claim{}
		}
		d.byName[c.Name][ref] = c
	}
	if len(next) == 0 {
		delete(d.byObject, ref)
	} else {
		d.byObject[ref] = next
	}

	var changed []string
	for _, name := range slices.Sorted(maps.Keys(touched)) {
		if d.remerge(name) {
			changed = append(changed, name)
		}
	}
	return changed
}

// Delete forgets the object ref and returns the names whose endpoint or conflicts changed.
func (d *Desired) Delete(ref record.ObjectRef) []string { return d.Set(ref, nil) }

// remerge merges one name again and reports whether its endpoint or conflicts changed.
func (d *Desired) remerge(name string) bool {
	prev := d.merged[name]
	claims := d.byName[name]
	var cur merged
	has := false
	if len(claims) > 0 {
		cur.ep, has, cur.conflicts = mergeName(name, slices.Collect(maps.Values(claims)))
	}
	if !has && len(cur.conflicts) == 0 {
		delete(d.merged, name)
	} else {
		d.merged[name] = cur
	}
	return !equalMerged(prev, cur) // a name absent before or after compares as the zero value
}

// Endpoints returns every merged endpoint, sorted by name.
func (d *Desired) Endpoints() []record.Endpoint {
	d.mu.Lock()
	defer d.mu.Unlock()
	var eps []record.Endpoint
	for _, name := range slices.Sorted(maps.Keys(d.merged)) {
		if m := d.merged[name]; m.ep.Name != "" {
			eps = append(eps, cloneEndpoint(m.ep))
		}
	}
	return eps
}

// Endpoint returns the merged endpoint of one name.
func (d *Desired) Endpoint(name string) (record.Endpoint, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	m, ok := d.merged[name]
	if !ok || m.ep.Name == "" {
		return record.Endpoint{}, false
	}
	return cloneEndpoint(m.ep), true
}

// NameConflicts returns the conflicts (losing claims) on one name, sorted.
func (d *Desired) NameConflicts(name string) []Rejection {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.merged[name].conflicts)
}

// Conflicts returns the conflicts on every name, sorted.
func (d *Desired) Conflicts() []Rejection {
	d.mu.Lock()
	defer d.mu.Unlock()
	var all []Rejection
	for _, m := range d.merged {
		all = append(all, m.conflicts...)
	}
	slices.SortFunc(all, compareRejections)
	return all
}

// Claims returns the claims stored for one object, sorted by name.
func (d *Desired) Claims(ref record.ObjectRef) []Claim {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.byObject[ref])
}

func equalMerged(a, b merged) bool {
	return a.ep.Name == b.ep.Name && a.ep.TTL == b.ep.TTL &&
		slices.Equal(a.ep.Targets, b.ep.Targets) && slices.Equal(a.ep.Records, b.ep.Records) &&
		slices.Equal(a.ep.Sources, b.ep.Sources) &&
		slices.Equal(a.conflicts, b.conflicts)
}

func cloneEndpoint(ep record.Endpoint) record.Endpoint {
	ep.Targets = slices.Clone(ep.Targets)
	ep.Records = slices.Clone(ep.Records)
	ep.Sources = slices.Clone(ep.Sources)
	return ep
}

func minTTL(a, b uint32) uint32 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}
