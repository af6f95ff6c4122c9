package plan

import (
	"fmt"
	"math"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// planner makes one Plan: the input, the plan so far, and the keys deleted by it and by the
// earlier plans of the same reconcile (Input.Deleted).
type planner struct {
	in      Input
	plan    Plan
	deleted map[string]bool
}

// nameInput is one name to plan: what the sources want of it and what etcd holds there.
type nameInput struct {
	name   string
	ep     record.Endpoint
	wanted bool         // ep is wanted; false: the name is no longer wanted
	cur    []KV         // every owner's keys one level below the name
	reg    []registryKV // external-dns's registry records of the name (Input.Registry)
}

// held is what etcd holds at one name, as this owner sees it.
type held struct {
	own      map[string]KV     // our keys, and those taken over from external-dns
	byKey    map[string]string // every key -> its owner
	claims   map[string]int64  // other owner -> its oldest create revision there
	ownClaim int64             // our oldest create revision there; math.MaxInt64: none
	adopt    map[string]bool   // keys taken over (adoptable)
	registry map[string]bool   // of those, the registry records
}

// planName plans one name: it may be out of the domain filter, stopped by a key that is not
// ours, lost to another owner, or held by a create-only policy; else its keys converge.
func (pl *planner) planName(n nameInput) {
	h := pl.held(n)
	if !n.wanted && len(h.own) == 0 {
		return // nothing of ours, nothing wanted
	}
	if pl.in.Allow != nil && !pl.in.Allow(n.name) {
		pl.plan.Skipped = append(pl.plan.Skipped, Skip{Name: n.name, Reason: ReasonDomainFilter})
		return
	}
	want, ok := pl.wantedKeys(n, h)
	if !ok {
		return
	}
	if n.wanted && pl.lost(n, h, want) {
		want, n.wanted = nil, false // withdraw: as if not wanted
	}
	if pl.in.Policy == CreateOnly && len(h.own) > 0 {
		pl.keepCreated(n.name, h, want)
		return
	}
	pl.converge(n, h, want)
}

// held reads what etcd holds at the name: whose each key is, each owner's claim on the name,
// and which keys (and registry records) we take over from external-dns.
func (pl *planner) held(n nameInput) held {
	h := held{own: make(map[string]KV), byKey: make(map[string]string, len(n.cur)),
		claims: make(map[string]int64), ownClaim: math.MaxInt64}
	h.adopt, h.registry = adoptable(pl.in, n.cur, n.reg)
	for _, kv := range n.cur {
		o := record.OwnerOf(kv.Value)
		h.byKey[kv.Key] = o
		switch {
		case o == pl.in.Owner || h.adopt[kv.Key]:
			h.own[kv.Key] = kv
			h.ownClaim = min(h.ownClaim, kv.CreateRevision)
		case o != "":
			if r, ok := h.claims[o]; !ok || kv.CreateRevision < r {
				h.claims[o] = kv.CreateRevision
			}
		}
	}
	// The registry records taken over go with the name's change; they make no claim on it.
	for _, r := range n.reg {
		if h.adopt[r.Key] && !pl.deleted[r.Key] {
			h.own[r.Key] = r.KV
		}
	}
	return h
}

// wantedKeys are the keys we want at the name, one per target and one per typed record. A key
// that another owner (or nobody) holds stops the name, reported: it is not ours to overwrite.
func (pl *planner) wantedKeys(n nameInput, h held) (map[string]Put, bool) {
	want := make(map[string]Put)
	if !n.wanted {
		return want, true
	}
	take := func(k, what string, v record.Value) bool {
		if o, ok := h.byKey[k]; ok && o != pl.in.Owner && !h.adopt[k] {
			holder := "no owner"
			if o != "" {
				holder = "owner " + o
			}
			pl.plan.Skipped = append(pl.plan.Skipped, Skip{Name: n.name, Reason: ReasonNotOwned,
				Detail: fmt.Sprintf("key %s (%s) is held by %s", k, what, holder)})
			return false
		}
		want[k] = Put{Key: k, Value: v.Encode(), Lease: pl.in.Lease}
		return true
	}
	for _, t := range n.ep.Targets {
		if !take(record.Key(pl.in.Prefix, n.name, pl.in.Owner, t), "target "+t, record.NewValue(n.ep, pl.in.Owner, t)) {
			return nil, false
		}
	}
	for _, r := range n.ep.Records {
		if !take(r.Key(pl.in.Prefix, n.name, pl.in.Owner), r.String(), record.NewTypedValue(n.ep, pl.in.Owner, r)) {
			return nil, false
		}
	}
	return want, true
}

// lost reports, and records as a Conflict, whether another owner keeps the name from us: under
// the CNAME rule in any mode, or by an older claim in exclusive mode.
func (pl *planner) lost(n nameInput, h held, want map[string]Put) bool {
	c, lost := cnameConflict(pl.in.Owner, n, h, want)
	if !lost && pl.in.Conflicts == Exclusive {
		var winner string
		var rev int64
		if winner, rev, lost = loses(h.claims, h.ownClaim, pl.in.Owner); lost {
			c = Conflict{Name: n.name, Winner: winner, WinnerRevision: rev}
		}
	}
	if !lost {
		return false
	}
	if h.ownClaim != math.MaxInt64 {
		c.OwnRevision = h.ownClaim
	}
	c.Sources = n.ep.Sources
	pl.plan.Conflicts = append(pl.plan.Conflicts, c)
	return true
}

// loses reports whether some other owner's claim is older than ours (exclusive mode): an
// owner's claim is the oldest create revision among its keys for the name, ties broken by the
// smaller owner id.
func loses(claims map[string]int64, ownClaim int64, owner string) (winner string, rev int64, lost bool) {
	winner, rev = owner, ownClaim
	for o, r := range claims {
		if r < rev || (r == rev && o < winner) {
			winner, rev = o, r
		}
	}
	return winner, rev, winner != owner
}

// keepCreated is the create-only policy at a name we hold keys of: they are left as they are
// (a change is reported as skipped), but not to expire: an own key on another lease (a
// predecessor's, now dead) is put again, same value, on the lease kept alive.
func (pl *planner) keepCreated(name string, h held, want map[string]Put) {
	if !sameKeys(h.own, want) || changedValues(h.own, want) {
		pl.plan.Skipped = append(pl.plan.Skipped, Skip{Name: name, Reason: ReasonPolicy,
			Detail: "create-only: the name already has records of this owner"})
	}
	if pl.in.Lease == 0 {
		return
	}
	c := Change{Name: name}
	for _, k := range sortedKeys(h.own) {
		if kv := h.own[k]; kv.Lease != pl.in.Lease && !h.adopt[k] {
			c.Puts = append(c.Puts, Put{Key: k, Value: kv.Value, Lease: pl.in.Lease})
		}
	}
	if c.Ops() > 0 {
		pl.plan.Changes = append(pl.plan.Changes, c)
	}
}

// converge is the change that makes our keys at the name the wanted ones: the puts of keys
// missing or out of date, and the deletes of the others, unless the sources have not synced
// or the policy keeps them.
func (pl *planner) converge(n nameInput, h held, want map[string]Put) {
	c := Change{Name: n.name}
	for _, k := range sortedKeys(want) {
		put := want[k]
		// Before the sources have synced, the objects a name lists may be only those seen so
		// far: a value that answers as wanted is not rewritten for its list alone (a restart
		// would write, and tell, a change that is none); the resync once they sync does it.
		if kv, ok := h.own[k]; ok && kv.Lease == put.Lease &&
			(upToDate(kv.Value, put.Value) || (!pl.in.Synced && answersAlike(kv.Value, put.Value))) {
			continue
		}
		c.Puts = append(c.Puts, put)
	}
	var stale []string
	for _, k := range sortedKeys(h.own) {
		if _, ok := want[k]; !ok && !pl.deleted[k] {
			stale = append(stale, k)
		}
	}
	switch {
	case len(stale) == 0:
	case !pl.in.Synced:
		pl.plan.Skipped = append(pl.plan.Skipped, Skip{Name: n.name, Reason: ReasonNotSynced,
			Detail: fmt.Sprintf("%d key(s) kept", len(stale))})
	case pl.in.Policy == UpsertOnly && !n.wanted:
		pl.plan.Skipped = append(pl.plan.Skipped, Skip{Name: n.name, Reason: ReasonPolicy,
			Detail: fmt.Sprintf("upsert-only: %d key(s) of a name no longer wanted kept", len(stale))})
	default:
		c.Deletes = stale
		for _, k := range stale {
			pl.deleted[k] = true
			if h.adopt[k] {
				c.Adopted++
			}
			if h.registry[k] {
				c.Registry = append(c.Registry, k)
			}
		}
	}
	c.Claim = len(h.own) == 0 && len(c.Puts) > 0
	c.Withdraws = len(want) == 0 && len(c.Deletes) > 0
	if c.Ops() > 0 {
		pl.plan.Changes = append(pl.plan.Changes, c)
	}
}
