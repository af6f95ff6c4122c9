package plan

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// The tables of Make, one per rule. Each case plans one Input for the owner me under the
// prefix skydns; a case that wants nothing wants an empty plan.

// The endpoints the tables plan: name as its targets, TTL, kind and objects change.
var (
	web     = ep(name, 60, "10.0.0.1")
	web2    = ep(name, 60, "10.0.0.1", "10.0.0.2")
	moved   = ep(name, 60, "10.0.0.9")
	ttl     = ep(name, 30, "10.0.0.1")
	cname   = ep(name, 0, "lb.example.net")
	wild    = ep("*.apps.eu1.openmcp.cluster", 0, "10.0.0.1")
	child   = ep("x."+name, 0, "10.0.0.5")
	withSrc = func() record.Endpoint {
		e := web
		e.Sources = []record.ObjectRef{{Kind: "HTTPRoute", Namespace: "ns", Name: "web"}}
		return e
	}()
)

type makeCase struct {
	name string
	in   Input
	want summary
}

func runMake(t *testing.T, tests []makeCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Prefix = "skydns"
			in.Owner = me
			got := summarize(Make(in))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan:\n got changes   %q\n want changes  %q\n got conflicts %q\n want          %q\n got skipped   %q\n want          %q",
					got.changes, tc.want.changes, got.conflicts, tc.want.conflicts, got.skipped, tc.want.skipped)
			}
		})
	}
}

// What a name that this owner alone publishes becomes: one key per target, written again only
// when its value changed, deleted when the name is no longer wanted.
func TestMakeWritesOneKeyPerTargetAndOnlyWhatChanged(t *testing.T) {
	runMake(t, []makeCase{
		{
			name: "new name gets one key per target",
			in:   Input{Names: []string{name}, Desired: []record.Endpoint{web2}},
			want: summary{changes: []string{change(name, puts(key(me, name, "10.0.0.1"), key(me, name, "10.0.0.2")))}},
		},
		{
			name: "unchanged name writes nothing (a restart rewrites nothing)",
			in:   Input{Names: []string{name}, Desired: []record.Endpoint{web2}, Current: []KV{own(web2, "10.0.0.1", 5), own(web2, "10.0.0.2", 5)}},
		},
		{
			name: "value written by another encoder with the same content is not rewritten",
			in: Input{Names: []string{name}, Desired: []record.Endpoint{web},
				Current: []KV{{Key: key(me, name, "10.0.0.1"), Value: []byte(`{"owner":"` + me + `","targetstrip":1,"ttl":60,"host":"10.0.0.1","text":""}`), CreateRevision: 3}}},
		},
		{
			name: "changed target puts the new key and deletes the old in one change",
			in:   Input{Synced: true, Names: []string{name}, Desired: []record.Endpoint{moved}, Current: []KV{own(web, "10.0.0.1", 5)}},
			want: summary{changes: []string{change(name, puts(key(me, name, "10.0.0.9")), key(me, name, "10.0.0.1"))}},
		},
		{
			name: "one target of two removed deletes only its key",
			in:   Input{Synced: true, Names: []string{name}, Desired: []record.Endpoint{web}, Current: []KV{own(web2, "10.0.0.1", 5), own(web2, "10.0.0.2", 5)}},
			want: summary{changes: []string{change(name, nil, key(me, name, "10.0.0.2"))}},
		},
		{
			name: "changed ttl rewrites the value at the same key",
			in:   Input{Names: []string{name}, Desired: []record.Endpoint{ttl}, Current: []KV{own(web, "10.0.0.1", 5)}},
			want: summary{changes: []string{change(name, puts(key(me, name, "10.0.0.1")))}},
		},
		{
			name: "changed provenance rewrites the value at the same key",
			in:   Input{Synced: true, Names: []string{name}, Desired: []record.Endpoint{withSrc}, Current: []KV{own(web, "10.0.0.1", 5)}},
			want: summary{changes: []string{change(name, puts(key(me, name, "10.0.0.1")))}},
		},
		{
			name: "name no longer wanted: sync deletes its keys",
			in:   Input{Synced: true, Names: []string{name}, Current: []KV{own(web2, "10.0.0.1", 5), own(web2, "10.0.0.2", 6)}},
			want: summary{changes: []string{change(name, nil, key(me, name, "10.0.0.1"), key(me, name, "10.0.0.2"))}},
		},
		{
			name: "wildcard name lives under a * element",
			in:   Input{Synced: true, Names: []string{wild.Name}, Desired: []record.Endpoint{wild}},
			want: summary{changes: []string{change(wild.Name, puts(key(me, wild.Name, "10.0.0.1")))}},
		},
		{
			name: "cname target",
			in:   Input{Synced: true, Names: []string{name}, Desired: []record.Endpoint{cname}, Current: []KV{own(web, "10.0.0.1", 4)}},
			want: summary{changes: []string{change(name, puts(key(me, name, "lb.example.net")), key(me, name, "10.0.0.1"))}},
		},
	})
}

// Which names a plan covers, and which keys are a name's.
func TestMakeScopesANameToItsOwnKeys(t *testing.T) {
	runMake(t, []makeCase{
		{
			name: "keys of a name below a planned name are not its records",
			in:   Input{Synced: true, Names: []string{name}, Desired: []record.Endpoint{web}, Current: []KV{own(web, "10.0.0.1", 4), own(child, "10.0.0.5", 4)}},
		},
		{
			name: "endpoints and keys of names outside Names are ignored",
			in:   Input{Synced: true, Names: []string{name}, Desired: []record.Endpoint{web, child}, Current: []KV{own(web, "10.0.0.1", 4), own(child, "10.0.0.6", 4)}},
		},
		{
			name: "names are normalised",
			in:   Input{Synced: true, Names: []string{"APP.eu1.openmcp.cluster."}, Desired: []record.Endpoint{ep("App.EU1.openmcp.cluster", 60, "10.0.0.1")}},
			want: summary{changes: []string{change(name, puts(key(me, name, "10.0.0.1")))}},
		},
		{
			name: "several names come out sorted, each with its own change",
			in: Input{Synced: true, Names: []string{"b." + name, name, "a." + name},
				Desired: []record.Endpoint{ep("b."+name, 0, "10.0.0.2"), web, ep("a."+name, 0, "10.0.0.1")}},
			want: summary{changes: []string{
				change("a."+name, puts(key(me, "a."+name, "10.0.0.1"))),
				change(name, puts(key(me, name, "10.0.0.1"))),
				change("b."+name, puts(key(me, "b."+name, "10.0.0.2"))),
			}},
		},
	})
}

// The upsert-only and create-only policies: what each lets the owner write and delete.
func TestMakeUnderAPolicy(t *testing.T) {
	runMake(t, []makeCase{
		{
			name: "name no longer wanted: upsert-only keeps its keys and says so",
			in:   Input{Synced: true, Policy: UpsertOnly, Names: []string{name}, Current: []KV{own(web, "10.0.0.1", 5)}},
			want: summary{skipped: []string{name + ": " + string(ReasonPolicy)}},
		},
		{
			name: "upsert-only creates a new name",
			in:   Input{Synced: true, Policy: UpsertOnly, Names: []string{name}, Desired: []record.Endpoint{web}},
			want: summary{changes: []string{change(name, puts(key(me, name, "10.0.0.1")))}},
		},
		{
			name: "upsert-only replaces a changed target like an update",
			in:   Input{Synced: true, Policy: UpsertOnly, Names: []string{name}, Desired: []record.Endpoint{moved}, Current: []KV{own(web, "10.0.0.1", 5)}},
			want: summary{changes: []string{change(name, puts(key(me, name, "10.0.0.9")), key(me, name, "10.0.0.1"))}},
		},
		{
			name: "create-only creates a name this owner has no key for",
			in:   Input{Synced: true, Policy: CreateOnly, Names: []string{name}, Desired: []record.Endpoint{web}, Current: []KV{theirs(other, web, "10.0.0.7", 2)}},
			want: summary{changes: []string{change(name, puts(key(me, name, "10.0.0.1")))}},
		},
		{
			name: "create-only never updates a changed target",
			in:   Input{Synced: true, Policy: CreateOnly, Names: []string{name}, Desired: []record.Endpoint{moved}, Current: []KV{own(web, "10.0.0.1", 5)}},
			want: summary{skipped: []string{name + ": " + string(ReasonPolicy)}},
		},
		{
			name: "create-only never updates a changed ttl",
			in:   Input{Synced: true, Policy: CreateOnly, Names: []string{name}, Desired: []record.Endpoint{ttl}, Current: []KV{own(web, "10.0.0.1", 5)}},
			want: summary{skipped: []string{name + ": " + string(ReasonPolicy)}},
		},
		{
			name: "create-only never deletes a name no longer wanted",
			in:   Input{Synced: true, Policy: CreateOnly, Names: []string{name}, Current: []KV{own(web, "10.0.0.1", 5)}},
			want: summary{skipped: []string{name + ": " + string(ReasonPolicy)}},
		},
		{
			name: "create-only with a lease moves its keys to the lease, values untouched",
			in:   Input{Synced: true, Policy: CreateOnly, Lease: 7, Names: []string{name}, Desired: []record.Endpoint{moved}, Current: []KV{own(web, "10.0.0.1", 5)}},
			want: summary{
				changes: []string{change(name, puts(key(me, name, "10.0.0.1")))},
				skipped: []string{name + ": " + string(ReasonPolicy)},
			},
		},
		{
			name: "create-only with a lease leaves keys already on it alone",
			in: Input{Synced: true, Policy: CreateOnly, Lease: 7, Names: []string{name}, Desired: []record.Endpoint{web},
				Current: []KV{func() KV { kv := own(web, "10.0.0.1", 5); kv.Lease = 7; return kv }()}},
		},
		{
			name: "create-only with nothing changed is silent",
			in:   Input{Synced: true, Policy: CreateOnly, Names: []string{name}, Desired: []record.Endpoint{web}, Current: []KV{own(web, "10.0.0.1", 5)}},
		},
	})
}

// Sources not synced yet: nothing is deleted because it was not seen.
func TestMakeDeletesNothingBeforeTheSourcesSynced(t *testing.T) {
	runMake(t, []makeCase{
		{
			name: "sources not synced: a removed name is kept",
			in:   Input{Synced: false, Names: []string{name}, Current: []KV{own(web, "10.0.0.1", 5)}},
			want: summary{skipped: []string{name + ": " + string(ReasonNotSynced)}},
		},
		{
			name: "sources not synced: a changed target is added but the old key kept",
			in:   Input{Synced: false, Names: []string{name}, Desired: []record.Endpoint{moved}, Current: []KV{own(web, "10.0.0.1", 5)}},
			want: summary{
				changes: []string{change(name, puts(key(me, name, "10.0.0.9")))},
				skipped: []string{name + ": " + string(ReasonNotSynced)},
			},
		},
		{
			name: "adoption is withheld on deletes until synced, but the new keys are put",
			in: Input{Synced: false, Names: []string{name}, Desired: []record.Endpoint{web},
				Current: []KV{raw(name, "3e6bee2e", edns("10.0.0.1", me), 2)}},
			want: summary{
				changes: []string{change(name, puts(key(me, name, "10.0.0.1")))},
				skipped: []string{name + ": " + string(ReasonNotSynced)},
			},
		},
	})
}

// Keys of other owners, of none, and external-dns's of this owner (adopted).
func TestMakeLeavesOtherOwnersKeysAlone(t *testing.T) {
	runMake(t, []makeCase{
		{
			name: "shared: another owner's keys stay and ours are added",
			in:   Input{Synced: true, Names: []string{name}, Desired: []record.Endpoint{web}, Current: []KV{theirs(other, web, "10.0.0.7", 2)}},
			want: summary{changes: []string{change(name, puts(key(me, name, "10.0.0.1")))}},
		},
		{
			name: "another owner's keys are never deleted, even when we withdraw the name",
			in:   Input{Synced: true, Names: []string{name}, Current: []KV{theirs(other, web, "10.0.0.7", 2), own(web, "10.0.0.1", 5)}},
			want: summary{changes: []string{change(name, nil, key(me, name, "10.0.0.1"))}},
		},
		{
			name: "keys without owner are never touched",
			in: Input{Synced: true, Names: []string{name}, Desired: []record.Endpoint{web},
				Current: []KV{raw(name, "3e6bee2e", edns("10.0.0.1", ""), 2), raw(name, "junk0001", `not json`, 3)}},
			want: summary{changes: []string{change(name, puts(key(me, name, "10.0.0.1")))}},
		},
		{
			name: "external-dns keys of a different owner are not adopted",
			in: Input{Synced: true, Names: []string{name}, Desired: []record.Endpoint{web},
				Current: []KV{raw(name, "3e6bee2e", edns("10.0.0.1", other), 2)}},
			want: summary{changes: []string{change(name, puts(key(me, name, "10.0.0.1")))}},
		},
		{
			name: "adoption: own external-dns keys are replaced by deterministic keys in the same change",
			in: Input{Synced: true, Names: []string{name}, Desired: []record.Endpoint{web2},
				Current: []KV{raw(name, "3e6bee2e", edns("10.0.0.1", me), 2), raw(name, "a1b2c3d4", edns("10.0.0.2", me), 2)}},
			want: summary{changes: []string{change(name,
				puts(key(me, name, "10.0.0.1"), key(me, name, "10.0.0.2")),
				record.NamePath("skydns", name)+"/3e6bee2e", record.NamePath("skydns", name)+"/a1b2c3d4")}},
		},
		{
			name: "a key we would write held by another owner skips the name",
			in: Input{Synced: true, Names: []string{name}, Desired: []record.Endpoint{web},
				Current: []KV{{Key: key(me, name, "10.0.0.1"), Value: val(other, web, "10.0.0.1"), CreateRevision: 2}}},
			want: summary{skipped: []string{name + ": " + string(ReasonNotOwned)}},
		},
		{
			name: "a key we would write held by no owner skips the name",
			in: Input{Synced: true, Names: []string{name}, Desired: []record.Endpoint{web},
				Current: []KV{{Key: key(me, name, "10.0.0.1"), Value: []byte(edns("10.0.0.1", "")), CreateRevision: 2}}},
			want: summary{skipped: []string{name + ": " + string(ReasonNotOwned)}},
		},
	})
}

// The exclusive conflict mode: the oldest claim of a name keeps it.
func TestMakeInExclusiveMode(t *testing.T) {
	runMake(t, []makeCase{
		{
			name: "exclusive: an older owner wins, we write nothing and report it",
			in: Input{Synced: true, Conflicts: Exclusive, Names: []string{name}, Desired: []record.Endpoint{web},
				Current: []KV{theirs(other, web, "10.0.0.7", 2)}},
			want: summary{conflicts: []string{name + " lost to " + other + "@2"}},
		},
		{
			name: "exclusive: our older claim wins and we keep writing",
			in: Input{Synced: true, Conflicts: Exclusive, Names: []string{name}, Desired: []record.Endpoint{web2},
				Current: []KV{own(web, "10.0.0.1", 2), theirs(other, web, "10.0.0.7", 9)}},
			want: summary{changes: []string{change(name, puts(key(me, name, "10.0.0.2")))}},
		},
		{
			name: "exclusive: keys written in a race by the younger claim are withdrawn",
			in: Input{Synced: true, Conflicts: Exclusive, Names: []string{name}, Desired: []record.Endpoint{web},
				Current: []KV{own(web, "10.0.0.1", 8), theirs(other, web, "10.0.0.7", 7)}},
			want: summary{
				changes:   []string{change(name, nil, key(me, name, "10.0.0.1"))},
				conflicts: []string{name + " lost to " + other + "@7"},
			},
		},
		{
			name: "exclusive: the claim is the oldest key of each owner",
			in: Input{Synced: true, Conflicts: Exclusive, Names: []string{name}, Desired: []record.Endpoint{web2},
				Current: []KV{own(web2, "10.0.0.1", 3), own(web2, "10.0.0.2", 10), theirs(other, web, "10.0.0.7", 5)}},
		},
		{
			name: "exclusive: a loser under upsert-only keeps its keys and reports both",
			in: Input{Synced: true, Policy: UpsertOnly, Conflicts: Exclusive, Names: []string{name}, Desired: []record.Endpoint{web},
				Current: []KV{own(web, "10.0.0.1", 8), theirs(other, web, "10.0.0.7", 7)}},
			want: summary{
				conflicts: []string{name + " lost to " + other + "@7"},
				skipped:   []string{name + ": " + string(ReasonPolicy)},
			},
		},
		{
			name: "exclusive: keys without owner are no claim",
			in: Input{Synced: true, Conflicts: Exclusive, Names: []string{name}, Desired: []record.Endpoint{web},
				Current: []KV{raw(name, "3e6bee2e", edns("10.0.0.5", ""), 1)}},
			want: summary{changes: []string{change(name, puts(key(me, name, "10.0.0.1")))}},
		},
		{
			name: "exclusive: withdrawing a name we no longer want is no conflict",
			in: Input{Synced: true, Conflicts: Exclusive, Names: []string{name},
				Current: []KV{own(web, "10.0.0.1", 8), theirs(other, web, "10.0.0.7", 7)}},
			want: summary{changes: []string{change(name, nil, key(me, name, "10.0.0.1"))}},
		},
	})
}

// The domain filter: a refused name is reported when this owner has something for it.
func TestMakeWithinTheDomainFilter(t *testing.T) {
	runMake(t, []makeCase{
		{
			name: "domain filter: a refused name is reported and nothing is written",
			in: Input{Synced: true, Names: []string{"app.other.zone"}, Desired: []record.Endpoint{ep("app.other.zone", 0, "10.0.0.1")},
				Allow: func(n string) bool { return strings.HasSuffix(n, ".eu1.openmcp.cluster") }},
			want: summary{skipped: []string{"app.other.zone: " + string(ReasonDomainFilter)}},
		},
		{
			name: "domain filter: own keys outside the filter are left alone",
			in: Input{Synced: true, Names: []string{"app.other.zone"}, Current: []KV{own(ep("app.other.zone", 0, "10.0.0.1"), "10.0.0.1", 3)},
				Allow: func(n string) bool { return strings.HasSuffix(n, ".eu1.openmcp.cluster") }},
			want: summary{skipped: []string{"app.other.zone: " + string(ReasonDomainFilter)}},
		},
		{
			name: "domain filter: a refused name with nothing of ours is not reported",
			in: Input{Synced: true, Names: []string{"app.other.zone"}, Current: []KV{theirs(other, ep("app.other.zone", 0, "10.0.0.1"), "10.0.0.1", 3)},
				Allow: func(string) bool { return false }},
		},
	})
}

// Lease mode: every own key is on the writer's lease, and only then.
func TestMakeInLeaseMode(t *testing.T) {
	runMake(t, []makeCase{
		{
			name: "lease mode: an own key without the lease is put again with it",
			in:   Input{Synced: true, Lease: 42, Names: []string{name}, Desired: []record.Endpoint{web}, Current: []KV{own(web, "10.0.0.1", 5)}},
			want: summary{changes: []string{change(name, puts(key(me, name, "10.0.0.1")))}},
		},
		{
			name: "lease mode: an own key with the lease is left alone",
			in: Input{Synced: true, Lease: 42, Names: []string{name}, Desired: []record.Endpoint{web},
				Current: []KV{{Key: key(me, name, "10.0.0.1"), Value: val(me, web, "10.0.0.1"), CreateRevision: 5, Lease: 42}}},
		},
		{
			name: "leaving lease mode puts own keys again without lease",
			in: Input{Synced: true, Names: []string{name}, Desired: []record.Endpoint{web},
				Current: []KV{{Key: key(me, name, "10.0.0.1"), Value: val(me, web, "10.0.0.1"), CreateRevision: 5, Lease: 42}}},
			want: summary{changes: []string{change(name, puts(key(me, name, "10.0.0.1")))}},
		},
	})
}
