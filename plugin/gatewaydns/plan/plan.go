// Package plan decides what a writer changes in etcd: from the endpoints the sources want and
// the keys etcd holds for those names (every owner's), the puts and deletes of the writer's own
// keys, under a sync policy, a conflict mode and a domain filter. It is pure: no I/O, no clock.
//
// Rules:
//   - Only keys whose "owner" is Input.Owner are ever put over or deleted. Keys of other owners
//     and keys without an owner are read (for conflicts) and never touched.
//   - Own keys are at record.Key(prefix, name, owner, target); an own key elsewhere under the
//     name (external-dns's random suffix, a target that changed) is deleted in the same Change
//     that puts its replacement, so the writer applies both in one transaction and the name is
//     never without records.
//   - Exclusive mode: an owner's claim on a name is the oldest create revision among its keys for
//     that name; the smallest claim wins (ties: the smaller owner id). A writer that loses keeps
//     none of its keys (as far as the policy allows deleting) and reports a Conflict. A writer
//     with no key yet has the youngest possible claim, so it never displaces a present owner.
//   - The CNAME rule, in any mode: the writer withdraws with a Conflict when the server would
//     not answer one of its records under record.RuleCNAME (cname.go).
package plan

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/txtregistry"
)

// KV is one key read back from etcd.
type KV struct {
	Key            string
	Value          []byte
	CreateRevision int64
	ModRevision    int64
	Lease          int64
}

// Input is everything a plan depends on.
type Input struct {
	Prefix    string // the records' etcd path, e.g. "skydns"
	Owner     string // this writer's owner id; must not be empty
	Policy    Policy
	Conflicts ConflictMode
	// Lease is the lease own keys must carry (0: none). An own key with another lease is put again.
	Lease int64
	// Allow is the domain filter; nil allows every name. A name it refuses is left alone and
	// reported.
	Allow func(name string) bool
	// Synced is false while a source has not synced: then nothing is deleted.
	Synced bool
	// Names are the names to plan (record.NormalizeName form). A name in Names with no desired
	// endpoint is not wanted any more. Endpoints and keys of names not in Names are ignored.
	Names []string
	// Desired are the endpoints wanted, at most one per name.
	Desired []record.Endpoint
	// Current are the keys etcd holds one level below each name's key (record.RecordName), of
	// every owner and of none; with Registry, also those below each name's registry names
	// (txtregistry.Config.Names).
	Current []KV
	// Registry, when set, is external-dns's TXT registry to take over from: the keys it says
	// Registry.Owner holds are planned as this writer's own (see adoptable).
	Registry *txtregistry.Config
	// Deleted, when not nil, are the keys that earlier plans of the same reconcile delete (a
	// writer plans a large one in parts); Make adds those it deletes. A key found for names of
	// two parts (a registry record) is then deleted by the first only, as in one plan.
	Deleted map[string]bool
}

// Put writes Value at Key, bound to Lease when not 0.
type Put struct {
	Key   string
	Value []byte
	Lease int64
}

// Change is what to do for one name. Its puts and deletes belong in one transaction, puts
// first.
type Change struct {
	Name    string
	Puts    []Put
	Deletes []string // own keys only
	// Claim: the owner holds no key of the name yet, so these puts make its claim on it. Two
	// owners that claim one name at the same moment each plan from a read without the other's
	// keys; the writer commits a claim only if no other claim on the name was committed since
	// it was read, so the later one plans again and sees the older claim.
	Claim bool
	// Withdraws: the owner wants no record of the name and deletes its keys there.
	Withdraws bool
	// Adopted is how many of Deletes are keys taken over from external-dns (Input.Registry).
	Adopted int
	// Registry are the keys of Deletes that are external-dns's TXT registry records (counted
	// in Adopted too).
	Registry []string
}

// Ops is the number of etcd operations the change takes: its puts and deletes, and one for
// the name's claim guard (see package writer) when it claims or withdraws the name.
func (c Change) Ops() int {
	n := len(c.Puts) + len(c.Deletes)
	if c.Claim || c.Withdraws {
		n++
	}
	return n
}

// Conflict is a name this owner lost: to an older claim in exclusive mode, or, in any mode, to
// an older key that a CNAME cannot share the name with.
type Conflict struct {
	Name           string
	Winner         string // the owner holding the name
	WinnerRevision int64  // the create revision of the winner's oldest key for the name
	OwnRevision    int64  // ours; 0 when we hold no key
	// Detail says what the winner holds when the conflict is the CNAME rule's (a CNAME beside
	// addresses or text, or a second CNAME), in any mode; empty for an exclusive-mode conflict.
	Detail string
	// Sources are the objects that asked for the name (the endpoint's), to report it on.
	Sources []record.ObjectRef
}

// Reason says why a name, or part of its change, was left alone.
type Reason string

const (
	// ReasonDomainFilter: the name is outside the writer's domain filter.
	ReasonDomainFilter Reason = "domain-filter"
	// ReasonNotOwned: a key this owner would write is held by another owner or by no owner.
	ReasonNotOwned Reason = "not-owned"
	// ReasonPolicy: the policy forbids the change (create-only update, upsert-only delete).
	ReasonPolicy Reason = "policy"
	// ReasonNotSynced: deletes are withheld until the sources have synced.
	ReasonNotSynced Reason = "not-synced"
)

// Reasons are every Reason, so that a metric labelled with them can exist at zero for each
// before the first skip (TestReasonsNameEveryReason keeps the list whole).
var Reasons = []Reason{ReasonDomainFilter, ReasonNotOwned, ReasonPolicy, ReasonNotSynced}

// Skip reports a name (or its deletes) left alone.
type Skip struct {
	Name   string
	Reason Reason
	Detail string
}

// Plan is the outcome.
type Plan struct {
	Changes   []Change // sorted by name, only names with something to do
	Conflicts []Conflict
	Skipped   []Skip
}

// Make computes the plan. It panics when in.Owner is empty: a writer without an owner id
// could not tell its keys from anybody's.
func Make(in Input) Plan {
	if in.Owner == "" {
		panic("plan: empty owner id")
	}
	names := NormalizeNames(in.Names)
	scope := make(map[string]bool, len(names))
	for _, n := range names {
		scope[n] = true
	}
	desired := make(map[string]record.Endpoint, len(in.Desired))
	for _, ep := range in.Desired {
		n := record.NormalizeName(ep.Name)
		if scope[n] {
			ep.Name = n
			desired[n] = ep
		}
	}
	registries := registryScope(in.Registry, names)
	current, registry := heldAt(in, scope, registries)

	pl := planner{in: in, deleted: in.Deleted}
	if pl.deleted == nil {
		pl.deleted = make(map[string]bool)
	}
	// A registry record can be found for two names (as one's typed registry record and as
	// another's old-format one): only the first change deletes it, for one transaction must
	// not name a key twice. The names whose registry records these are go first, so that the
	// record goes with the change of the name it registers whether or not its own registry
	// name is in scope: a name's change is the same in a reconcile of that name alone and in
	// a full resync (a dry run tells each change once, and would otherwise tell it twice,
	// once with its registry records and once without, and the registry records as names of
	// their own with deletes only).
	order := slices.Clone(names)
	slices.SortStableFunc(order, func(a, b string) int {
		return cmp.Compare(len(registries[a]), len(registries[b]))
	})
	for _, n := range order {
		ep, wanted := desired[n]
		pl.planName(nameInput{name: n, ep: ep, wanted: wanted, cur: current[n], reg: registry[n]})
	}
	p := pl.plan
	byName := func(a, b string) int { return strings.Compare(a, b) }
	slices.SortStableFunc(p.Changes, func(a, b Change) int { return byName(a.Name, b.Name) })
	slices.SortStableFunc(p.Conflicts, func(a, b Conflict) int { return byName(a.Name, b.Name) })
	slices.SortStableFunc(p.Skipped, func(a, b Skip) int { return byName(a.Name, b.Name) })
	return p
}

// NormalizeNames is names in record.NormalizeName form, without empty ones and duplicates,
// sorted: the names a plan plans.
func NormalizeNames(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := make([]string, 0, len(names))
	for _, n := range names {
		n = record.NormalizeName(n)
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// heldAt sorts the keys etcd holds by the name in scope they are records of, and the keys
// found at registry names by the name they register.
func heldAt(in Input, scope map[string]bool, registries map[string][]registryEntry) (map[string][]KV, map[string][]registryKV) {
	current := make(map[string][]KV)
	registry := make(map[string][]registryKV)
	for _, kv := range in.Current {
		// Always the parent's name, where the server reads a key by record.NameOf: the keys a
		// writer holds are the record-id children it wrote (record.Key), and those it adopts
		// are external-dns's, laid out alike; so the parent is the name, whatever the last
		// element looks like.
		n, ok := record.RecordName(in.Prefix, kv.Key)
		if !ok {
			continue
		}
		if scope[n] {
			current[n] = append(current[n], kv)
		}
		for _, e := range registries[n] {
			registry[e.name] = append(registry[e.name], registryKV{KV: kv, Type: e.typ})
		}
	}
	return current, registry
}

// String is a short, stable description, for logs and test failures. A change that deletes
// external-dns's TXT registry records and nothing else says so: it is no name with records that
// the writer drops (a dry run's reader would take it for one).
func (c Change) String() string {
	var b strings.Builder
	b.WriteString(c.Name)
	for _, p := range c.Puts {
		fmt.Fprintf(&b, " +%s", p.Key)
	}
	for _, d := range c.Deletes {
		fmt.Fprintf(&b, " -%s", d)
	}
	if len(c.Puts) == 0 && len(c.Registry) > 0 && len(c.Registry) == len(c.Deletes) {
		b.WriteString(" (external-dns registry records only)")
	}
	return b.String()
}
