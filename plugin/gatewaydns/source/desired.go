package source

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Desired holds the claims of every object and the endpoints merged from them, so that a
// change to one object re-merges only the names that object claims (or claimed). It is safe
// for concurrent use.
//
// A writer holds one Desired for every name of its cluster, so its layout is chosen for size:
// each claim is stored once, under its object; a name keeps the objects that claim it and its
// merged endpoint, whose slices share the backing arrays of its claims when they are equal (the
// common case of one claim on a name). Stored slices are never written to: a change replaces
// them, and every read hands out copies.
type Desired struct {
	mu      sync.Mutex
	objects map[record.ObjectRef][]storedClaim // sorted by name, one per name
	names   map[string]*nameState
}

// storedClaim is a Claim as stored under its object: without Source, which is the object.
type storedClaim struct {
	name    string
	targets []string
	records []record.Typed
	ttl     uint32
	created time.Time
	// policy: field by field, the first of the object's claims on the name that sets it
	// (they agree: see agreeOnPolicy).
	policy Policy
}

func (c storedClaim) claim(ref record.ObjectRef) Claim {
	return Claim{Name: c.name, Targets: c.targets, Records: c.records, TTL: c.ttl, Source: ref, Created: c.created, Policy: c.policy}
}

func (c storedClaim) equal(o storedClaim) bool {
	return c.name == o.name && c.ttl == o.ttl && c.created.Equal(o.created) && c.policy == o.policy &&
		slices.Equal(c.targets, o.targets) && slices.Equal(c.records, o.records)
}

// nameState is one name: the objects that claim it, sorted (compareRefs), and what merging
// their claims gives. The name is kept while any object claims it.
type nameState struct {
	claimants []record.ObjectRef
	merged    merged
}

type merged struct {
	ep        record.Endpoint // Name is "" when no claim has a target
	conflicts []Rejection
}

// NewDesired returns an empty Desired.
func NewDesired() *Desired {
	return &Desired{objects: map[record.ObjectRef][]storedClaim{}, names: map[string]*nameState{}}
}

// Set replaces the claims of the object ref (ref is authoritative: each claim's Source is set
// to it; several claims on one name are combined; the claims are copied) and returns the names
// whose endpoint or conflicts changed, sorted: the caller hands those names' Endpoint (or
// their absence) to the plan and reports their NameConflicts. Set with no claims is Delete.
func (d *Desired) Set(ref record.ObjectRef, claims []Claim) []string {
	next := storedClaims(claims)

	d.mu.Lock()
	defer d.mu.Unlock()
	prev := d.objects[ref]
	if len(next) == 0 {
		delete(d.objects, ref)
	} else {
		d.objects[ref] = next
	}
	// prev and next are sorted by name: walk them together, in name order.
	var changed []string
	i, j := 0, 0
	for i < len(prev) || j < len(next) {
		var name string
		switch {
		case j == len(next) || (i < len(prev) && prev[i].name < next[j].name):
			name = prev[i].name // no longer claimed by ref
			d.names[name].claimants = withoutRef(d.names[name].claimants, ref)
			i++
		case i == len(prev) || next[j].name < prev[i].name:
			name = next[j].name // newly claimed by ref
			st := d.names[name]
			if st == nil {
				st = &nameState{}
				d.names[name] = st
			}
			st.claimants = withRef(st.claimants, ref)
			j++
		default: // claimed before and now: only a different claim changes the merge
			name = next[j].name
			same := prev[i].equal(next[j])
			i++
			j++
			if same {
				continue
			}
		}
		if d.remerge(name) {
			changed = append(changed, name)
		}
	}
	return changed
}

// storedClaims is claims in stored form: combined per name, targets sorted and unique, records
// in SortTyped form, sorted by name, in slices of their own.
func storedClaims(claims []Claim) []storedClaim {
	var out []storedClaim
	for _, c := range claims {
		i, found := slices.BinarySearchFunc(out, c.Name, func(s storedClaim, name string) int { return cmp.Compare(s.name, name) })
		if !found {
			out = slices.Insert(out, i, storedClaim{name: c.Name, ttl: c.TTL})
		} else {
			out[i].ttl = minTTL(out[i].ttl, c.TTL)
		}
		out[i].created = c.Created // the last claim's, as before (an object's claims share it)
		out[i].policy = out[i].policy.over(c.Policy)
		out[i].targets = append(out[i].targets, c.Targets...)
		out[i].records = append(out[i].records, c.Records...)
	}
	for i := range out {
		slices.Sort(out[i].targets)
		out[i].targets = slices.Clip(slices.Compact(out[i].targets))
		out[i].records = slices.Clip(record.SortTyped(out[i].records))
	}
	return slices.Clip(out)
}

// withRef and withoutRef return a new claimants slice: a merged endpoint's Sources may share
// the old one's backing array.
func withRef(refs []record.ObjectRef, ref record.ObjectRef) []record.ObjectRef {
	i, found := slices.BinarySearchFunc(refs, ref, compareRefs)
	if found {
		return refs
	}
	return slices.Insert(slices.Clip(refs), i, ref)
}

func withoutRef(refs []record.ObjectRef, ref record.ObjectRef) []record.ObjectRef {
	i, found := slices.BinarySearchFunc(refs, ref, compareRefs)
	if !found {
		return refs
	}
	if len(refs) == 1 {
		return nil
	}
	return append(slices.Clip(refs[:i]), refs[i+1:]...)
}

// Delete forgets the object ref and returns the names whose endpoint or conflicts changed.
func (d *Desired) Delete(ref record.ObjectRef) []string { return d.Set(ref, nil) }

// remerge merges one name again and reports whether its endpoint or conflicts changed.
func (d *Desired) remerge(name string) bool {
	st := d.names[name]
	prev := st.merged
	var cur merged
	if len(st.claimants) == 0 {
		delete(d.names, name)
	} else {
		claims := make([]Claim, len(st.claimants))
		for k, ref := range st.claimants {
			claims[k] = d.claimOn(ref, name)
		}
		ep, has, conflicts := mergeName(name, claims)
		if has {
			cur.ep = shareSlices(ep, st.claimants, claims)
		}
		cur.conflicts = slices.Clip(conflicts)
		st.merged = cur
	}
	return !equalMerged(prev, cur) // a name absent before or after compares as the zero value
}

// claimOn is the claim of the object ref on name; ref must claim it.
func (d *Desired) claimOn(ref record.ObjectRef, name string) Claim {
	stored := d.objects[ref]
	i, _ := slices.BinarySearchFunc(stored, name, func(s storedClaim, name string) int { return cmp.Compare(s.name, name) })
	return stored[i].claim(ref)
}

// shareSlices makes ep's slices those of the claims (and claimants) where they are equal, so
// that a name holds no copy of what its claims hold already.
func shareSlices(ep record.Endpoint, claimants []record.ObjectRef, claims []Claim) record.Endpoint {
	if slices.Equal(ep.Sources, claimants) {
		ep.Sources = claimants
	} else {
		ep.Sources = slices.Clip(ep.Sources)
	}
	ep.Targets = slices.Clip(ep.Targets)
	ep.Records = slices.Clip(ep.Records)
	for _, c := range claims {
		if len(ep.Targets) > 0 && slices.Equal(ep.Targets, c.Targets) {
			ep.Targets = c.Targets
		}
		if len(ep.Records) > 0 && slices.Equal(ep.Records, c.Records) {
			ep.Records = c.Records
		}
	}
	return ep
}

// Endpoints returns every merged endpoint, sorted by name.
func (d *Desired) Endpoints() []record.Endpoint {
	d.mu.Lock()
	defer d.mu.Unlock()
	var eps []record.Endpoint
	for _, name := range d.sortedNames() {
		eps = append(eps, cloneEndpoint(d.names[name].merged.ep))
	}
	return eps
}

// Names returns the names that have a merged endpoint, sorted: those of Endpoints, without
// copying the endpoints.
func (d *Desired) Names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sortedNames()
}

// Records returns how many records the merged endpoints hold: their targets and typed records.
func (d *Desired) Records() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, st := range d.names {
		n += len(st.merged.ep.Targets) + len(st.merged.ep.Records)
	}
	return n
}

func (d *Desired) sortedNames() []string {
	names := make([]string, 0, len(d.names))
	for name, st := range d.names {
		if st.merged.ep.Name != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Endpoint returns the merged endpoint of one name.
func (d *Desired) Endpoint(name string) (record.Endpoint, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st, ok := d.names[name]
	if !ok || st.merged.ep.Name == "" {
		return record.Endpoint{}, false
	}
	return cloneEndpoint(st.merged.ep), true
}

// Sources returns the objects whose claims make the endpoint of one name (its Sources, the
// winners of its merge), sorted; nil when no object asks for it. Unlike the other reads it hands
// out Desired's own slice, which a caller may keep (the objects a name was published for, of
// every name a writer holds): it is never written to, a change replaces it.
func (d *Desired) Sources(name string) []record.ObjectRef {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st, ok := d.names[name]; ok && st.merged.ep.Name != "" {
		return st.merged.ep.Sources
	}
	return nil
}

// NameConflicts returns the conflicts (losing claims) on one name, sorted.
func (d *Desired) NameConflicts(name string) []Rejection {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st, ok := d.names[name]; ok {
		return slices.Clone(st.merged.conflicts)
	}
	return nil
}

// Conflicts returns the conflicts on every name, sorted.
func (d *Desired) Conflicts() []Rejection {
	d.mu.Lock()
	defer d.mu.Unlock()
	var all []Rejection
	for _, st := range d.names {
		all = append(all, st.merged.conflicts...)
	}
	slices.SortFunc(all, compareRejections)
	return all
}

// Claims returns the claims stored for one object, sorted by name.
func (d *Desired) Claims(ref record.ObjectRef) []Claim {
	d.mu.Lock()
	defer d.mu.Unlock()
	stored := d.objects[ref]
	if stored == nil {
		return nil
	}
	out := make([]Claim, len(stored))
	for i, c := range stored {
		out[i] = c.claim(ref)
	}
	return out
}

func equalMerged(a, b merged) bool {
	return a.ep.Name == b.ep.Name && a.ep.TTL == b.ep.TTL && a.ep.Steering == b.ep.Steering &&
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
