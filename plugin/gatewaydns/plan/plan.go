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
package plan

import (
	"cmp"
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strings"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/txtregistry"
)

// Policy is what a writer may do to its own keys.
type Policy int

const (
	// Sync creates, updates and deletes own keys.
	Sync Policy = iota
	// UpsertOnly creates and updates; a name that is no longer wanted keeps its records. An
	// update of a name still wanted replaces its records (the old target's key goes), as
	// external-dns's upsert-only does.
	UpsertOnly
	// CreateOnly only publishes names this owner holds no key for; it never updates or deletes.
	CreateOnly
)

// ParsePolicy reads "sync", "upsert-only" or "create-only".
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "sync":
		return Sync, nil
	case "upsert-only":
		return UpsertOnly, nil
	case "create-only":
		return CreateOnly, nil
	}
	return Sync, fmt.Errorf("unknown policy %q: want sync, upsert-only or create-only", s)
}

func (p Policy) String() string {
	switch p {
	case Sync:
		return "sync"
	case UpsertOnly:
		return "upsert-only"
	case CreateOnly:
		return "create-only"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// ConflictMode is what happens when several owners publish one name.
type ConflictMode int

const (
	// Shared: every owner publishes; the answer is the union of their targets.
	Shared ConflictMode = iota
	// Exclusive: the oldest claim wins; the others withdraw and report a Conflict.
	Exclusive
)

// ParseConflictMode reads "shared" or "exclusive".
func ParseConflictMode(s string) (ConflictMode, error) {
	switch s {
	case "shared":
		return Shared, nil
	case "exclusive":
		return Exclusive, nil
	}
	return Shared, fmt.Errorf("unknown conflict mode %q: want shared or exclusive", s)
}

func (m ConflictMode) String() string {
	if m == Exclusive {
		return "exclusive"
	}
	return "shared"
}

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
	// Detail says what the winner holds when the conflict is a CNAME beside other data (or a
	// second CNAME), in any mode; empty for an exclusive-mode conflict.
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
	names := make([]string, 0, len(in.Names))
	scope := make(map[string]bool, len(in.Names))
	for _, n := range in.Names {
		n = record.NormalizeName(n)
		if n != "" && !scope[n] {
			scope[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)

	desired := make(map[string]record.Endpoint, len(in.Desired))
	for _, ep := range in.Desired {
		n := record.NormalizeName(ep.Name)
		if scope[n] {
			ep.Name = n
			desired[n] = ep
		}
	}
	current := make(map[string][]KV)
	registries := registryScope(in.Registry, names)
	registry := make(map[string][]registryKV)
	for _, kv := range in.Current {
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

	var p Plan
	// A registry record can be found for two names (as one's typed registry record and as
	// another's old-format one): only the first change deletes it, for one transaction must
	// not name a key twice. The names whose registry records these are go first, so that the
	// record goes with the change of the name it registers whether or not its own registry
	// name is in scope: a name's change is the same in a reconcile of that name alone and in
	// a full resync (a dry run tells each change once, and would otherwise tell it twice,
	// once with its registry records and once without, and the registry records as names of
	// their own with deletes only).
	deleted := in.Deleted
	if deleted == nil {
		deleted = make(map[string]bool)
	}
	order := slices.Clone(names)
	slices.SortStableFunc(order, func(a, b string) int {
		return cmp.Compare(len(registries[a]), len(registries[b]))
	})
	for _, n := range order {
		ep, want := desired[n]
		planName(&p, in, n, ep, want, current[n], registry[n], deleted)
	}
	byName := func(a, b string) int { return strings.Compare(a, b) }
	slices.SortStableFunc(p.Changes, func(a, b Change) int { return byName(a.Name, b.Name) })
	slices.SortStableFunc(p.Conflicts, func(a, b Conflict) int { return byName(a.Name, b.Name) })
	slices.SortStableFunc(p.Skipped, func(a, b Skip) int { return byName(a.Name, b.Name) })
	return p
}

func planName(p *Plan, in Input, name string, ep record.Endpoint, wanted bool, cur []KV, reg []registryKV, deleted map[string]bool) {
	adopt, registry := adoptable(in, cur, reg)
	own := make(map[string]KV)
	byKey := make(map[string]string, len(cur)) // key -> owner
	claims := make(map[string]int64)           // other owner -> oldest create revision
	ownClaim := int64(math.MaxInt64)
	for _, kv := range cur {
		o := record.OwnerOf(kv.Value)
		byKey[kv.Key] = o
		switch {
		case o == in.Owner || adopt[kv.Key]:
			own[kv.Key] = kv
			ownClaim = min(ownClaim, kv.CreateRevision)
		case o != "":
			if r, ok := claims[o]; !ok || kv.CreateRevision < r {
				claims[o] = kv.CreateRevision
			}
		}
	}
	// The registry records taken over go with the name's change; they make no claim on it.
	for _, r := range reg {
		if adopt[r.Key] && !deleted[r.Key] {
			own[r.Key] = r.KV
		}
	}
	if !wanted && len(own) == 0 {
		return // nothing of ours, nothing wanted
	}
	if in.Allow != nil && !in.Allow(name) {
		p.Skipped = append(p.Skipped, Skip{Name: name, Reason: ReasonDomainFilter})
		return
	}

	// The keys we want, one per target and one per typed record. A key that another owner (or
	// nobody) holds stops the name: it is not ours to overwrite.
	want := make(map[string]Put)
	take := func(k, what string, v record.Value) bool {
		if o, ok := byKey[k]; ok && o != in.Owner && !adopt[k] {
			holder := "no owner"
			if o != "" {
				holder = "owner " + o
			}
			p.Skipped = append(p.Skipped, Skip{Name: name, Reason: ReasonNotOwned,
				Detail: fmt.Sprintf("key %s (%s) is held by %s", k, what, holder)})
			return false
		}
		want[k] = Put{Key: k, Value: v.Encode(), Lease: in.Lease}
		return true
	}
	if wanted {
		for _, t := range ep.Targets {
			if !take(record.Key(in.Prefix, name, in.Owner, t), "target "+t, record.NewValue(ep, in.Owner, t)) {
				return
			}
		}
		for _, r := range ep.Records {
			if !take(r.Key(in.Prefix, name, in.Owner), r.String(), record.NewTypedValue(ep, in.Owner, r)) {
				return
			}
		}
	}

	if wanted {
		if c, lost := cnameRule(in.Owner, name, ep, cur, adopt, ownClaim); lost {
			c.Sources = ep.Sources
			p.Conflicts = append(p.Conflicts, c)
			want = nil // withdraw: as if not wanted
			wanted = false
		}
	}
	if wanted && in.Conflicts == Exclusive {
		if winner, rev, lost := loses(claims, ownClaim, in.Owner); lost {
			c := Conflict{Name: name, Winner: winner, WinnerRevision: rev, Sources: ep.Sources}
			if ownClaim != math.MaxInt64 {
				c.OwnRevision = ownClaim
			}
			p.Conflicts = append(p.Conflicts, c)
			want = nil // withdraw: as if not wanted
			wanted = false
		}
	}

	if in.Policy == CreateOnly && len(own) > 0 {
		if !sameKeys(own, want) || changedValues(own, want) {
			p.Skipped = append(p.Skipped, Skip{Name: name, Reason: ReasonPolicy,
				Detail: "create-only: the name already has records of this owner"})
		}
		// The records are left as they are, but not to expire: an own key on another lease
		// (a predecessor's, now dead) is put again, same value, on the lease kept alive.
		if in.Lease != 0 {
			c := Change{Name: name}
			for _, k := range sortedKeys(own) {
				if kv := own[k]; kv.Lease != in.Lease && !adopt[k] {
					c.Puts = append(c.Puts, Put{Key: k, Value: kv.Value, Lease: in.Lease})
				}
			}
			if c.Ops() > 0 {
				p.Changes = append(p.Changes, c)
			}
		}
		return
	}

	var c Change
	c.Name = name
	for _, k := range sortedKeys(want) {
		put := want[k]
		if kv, ok := own[k]; ok && kv.Lease == put.Lease && upToDate(kv.Value, put.Value) {
			continue
		}
		c.Puts = append(c.Puts, put)
	}
	var stale []string
	for _, k := range sortedKeys(own) {
		if _, ok := want[k]; !ok && !deleted[k] {
			stale = append(stale, k)
		}
	}
	switch {
	case len(stale) == 0:
	case !in.Synced:
		p.Skipped = append(p.Skipped, Skip{Name: name, Reason: ReasonNotSynced,
			Detail: fmt.Sprintf("%d key(s) kept", len(stale))})
	case in.Policy == UpsertOnly && !wanted:
		p.Skipped = append(p.Skipped, Skip{Name: name, Reason: ReasonPolicy,
			Detail: fmt.Sprintf("upsert-only: %d key(s) of a name no longer wanted kept", len(stale))})
	default:
		c.Deletes = stale
		for _, k := range stale {
			deleted[k] = true
			if adopt[k] {
				c.Adopted++
			}
			if registry[k] {
				c.Registry = append(c.Registry, k)
			}
		}
	}
	c.Claim = len(own) == 0 && len(c.Puts) > 0
	c.Withdraws = len(want) == 0 && len(c.Deletes) > 0
	if c.Ops() > 0 {
		p.Changes = append(p.Changes, c)
	}
}

// cnameRule applies RFC 1034 3.6.2 across owners, in shared and exclusive mode alike: a name
// with a CNAME has no other data (addresses, SRV or MX records), and one CNAME. (Text records
// take no part: external-dns's TXT registry records of its older format sit beside its CNAMEs.
// An SRV or MX record's host name is its target, not a CNAME: record.KindOf tells them apart.)
// When the endpoint and another owner's key (or a key without owner) disagree on that, the
// older claim keeps the name: the create revision
// of that key against the oldest of our own keys there (none: we are the later claimant). The
// server applies the same rule to whatever etcd holds (index.cnameRule), so an answer is valid
// DNS even while two writers race or a key was written by hand.
func cnameRule(owner, name string, ep record.Endpoint, cur []KV, adopt map[string]bool, ownClaim int64) (Conflict, bool) {
	ours, data := "", record.HasType(ep.Records, record.TypeSRV) || record.HasType(ep.Records, record.TypeMX)
	for _, t := range ep.Targets {
		if net.ParseIP(t) == nil {
			ours = record.NormalizeName(t)
		} else {
			data = true
		}
	}
	if ours == "" && !data {
		return Conflict{}, false // text only: no part in the rule
	}
	var oldest *KV
	var theirs string
	for i, kv := range cur {
		o := record.OwnerOf(kv.Value)
		if o == owner || adopt[kv.Key] {
			continue
		}
		target, ok := record.DataAnswer(kv.Value)
		if !ok {
			continue // text, or not a record a reader could serve: no part in the rule
		}
		clash := (ours == "") != (target == "") || (ours != "" && target != ours)
		if clash && (oldest == nil || kv.CreateRevision < oldest.CreateRevision) {
			oldest, theirs = &cur[i], target
		}
	}
	if oldest == nil || oldest.CreateRevision >= ownClaim {
		return Conflict{}, false
	}
	holder := record.OwnerOf(oldest.Value)
	who := "owner " + holder
	if holder == "" {
		who = "a key without owner (" + oldest.Key + ")"
	}
	var detail string
	switch {
	case ours != "" && theirs == "":
		detail = fmt.Sprintf("a CNAME cannot share its name with other data, and %s has %s there since revision %d", who, dataOf(oldest.Value), oldest.CreateRevision)
	case ours == "":
		detail = fmt.Sprintf("the name is a CNAME to %s of %s since revision %d, and a CNAME cannot share its name with %s", theirs, who, oldest.CreateRevision, oursData(ep))
	default:
		detail = fmt.Sprintf("the name is a CNAME to %s of %s since revision %d, and a name has one CNAME", theirs, who, oldest.CreateRevision)
	}
	c := Conflict{Name: name, Winner: holder, WinnerRevision: oldest.CreateRevision, Detail: detail}
	if ownClaim != math.MaxInt64 {
		c.OwnRevision = ownClaim
	}
	return c, true
}

// dataOf names the data of a value that is not a CNAME, for a Conflict's detail.
func dataOf(value []byte) string {
	v, err := record.ParseValue(value)
	if err == nil && record.KindOf(&v.Service) == record.Target {
		if v.Mail {
			return "an MX record"
		}
		return "an SRV record"
	}
	return "addresses"
}

// oursData names the data of an endpoint without a CNAME, for a Conflict's detail.
func oursData(ep record.Endpoint) string {
	if len(ep.Targets) > 0 {
		return "addresses"
	}
	if record.HasType(ep.Records, record.TypeSRV) {
		return "SRV records"
	}
	return "MX records"
}

// loses reports whether some other owner's claim is older than ours.
func loses(claims map[string]int64, ownClaim int64, owner string) (winner string, rev int64, lost bool) {
	winner, rev = owner, ownClaim
	for o, r := range claims {
		if r < rev || (r == rev && o < winner) {
			winner, rev = o, r
		}
	}
	return winner, rev, winner != owner
}

// upToDate reports whether the value etcd holds needs no rewrite to become want (see
// record.Value.Current).
func upToDate(have, want []byte) bool {
	if string(have) == string(want) {
		return true
	}
	vh, err := record.ParseValue(have)
	if err != nil {
		return false
	}
	vw, err := record.ParseValue(want)
	if err != nil {
		return false
	}
	return vh.Current(vw)
}

func sameKeys(own map[string]KV, want map[string]Put) bool {
	if len(own) != len(want) {
		return false
	}
	for k := range want {
		if _, ok := own[k]; !ok {
			return false
		}
	}
	return true
}

func changedValues(own map[string]KV, want map[string]Put) bool {
	for k, put := range want {
		if kv, ok := own[k]; ok && !upToDate(kv.Value, put.Value) {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
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
