package plan

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

const (
	me    = "prod.ns.eu1"
	other = "prod.ns.us1"
	name  = "app.eu1.openmcp.cluster"
)

func key(owner, n, target string) string { return record.Key("skydns", n, owner, target) }

func ep(n string, ttl uint32, targets ...string) record.Endpoint {
	return record.Endpoint{Name: n, Targets: targets, TTL: ttl}
}

func val(owner string, e record.Endpoint, target string) []byte {
	return record.NewValue(e, owner, target).Encode()
}

// own is our key for target as the writer writes it, created at rev.
func own(e record.Endpoint, target string, rev int64) KV {
	return KV{Key: key(me, e.Name, target), Value: val(me, e, target), CreateRevision: rev, ModRevision: rev}
}

func theirs(owner string, e record.Endpoint, target string, rev int64) KV {
	return KV{Key: key(owner, e.Name, target), Value: val(owner, e, target), CreateRevision: rev, ModRevision: rev}
}

// raw is a key at an arbitrary suffix of name, as external-dns or a person writes it.
func raw(n, suffix, value string, rev int64) KV {
	return KV{Key: record.NamePath("skydns", n) + "/" + suffix, Value: []byte(value), CreateRevision: rev, ModRevision: rev}
}

func edns(host, owner string) string {
	if owner == "" {
		return fmt.Sprintf(`{"host":%q,"text":"","ttl":300,"targetstrip":1}`, host)
	}
	return fmt.Sprintf(`{"host":%q,"text":"","ttl":300,"targetstrip":1,"owner":%q}`, host, owner)
}

// summary renders a plan as "name: +key -key" lines, conflicts and skips.
type summary struct {
	changes   []string
	conflicts []string
	skipped   []string
}

func summarize(p Plan) summary {
	var s summary
	for _, c := range p.Changes {
		s.changes = append(s.changes, c.String())
	}
	for _, c := range p.Conflicts {
		s.conflicts = append(s.conflicts, fmt.Sprintf("%s lost to %s@%d", c.Name, c.Winner, c.WinnerRevision))
	}
	for _, k := range p.Skipped {
		s.skipped = append(s.skipped, fmt.Sprintf("%s: %s", k.Name, k.Reason))
	}
	return s
}

func change(n string, puts []string, dels ...string) string {
	c := Change{Name: n, Deletes: dels}
	for _, p := range puts {
		c.Puts = append(c.Puts, Put{Key: p})
	}
	return c.String()
}

func puts(keys ...string) []string { return keys }

func TestMakePutsCarryValueAndLease(t *testing.T) {
	e := ep(name, 60, "10.0.0.1")
	p := Make(Input{Prefix: "skydns", Owner: me, Lease: 7, Synced: true, Names: []string{name}, Desired: []record.Endpoint{e}})
	if len(p.Changes) != 1 || len(p.Changes[0].Puts) != 1 {
		t.Fatalf("plan %+v", p)
	}
	put := p.Changes[0].Puts[0]
	if put.Lease != 7 || string(put.Value) != string(val(me, e, "10.0.0.1")) {
		t.Fatalf("put %+v", put)
	}
	if record.OwnerOf(put.Value) != me {
		t.Fatal("a put without our owner")
	}
}

func TestMakeRefusesEmptyOwner(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for an empty owner")
		}
	}()
	Make(Input{Prefix: "skydns"})
}

func TestParse(t *testing.T) {
	for _, s := range []string{"sync", "upsert-only", "create-only"} {
		p, err := ParsePolicy(s)
		if err != nil || p.String() != s {
			t.Errorf("ParsePolicy(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := ParsePolicy("upsert"); err == nil {
		t.Error("ParsePolicy accepted upsert")
	}
	for _, s := range []string{"shared", "exclusive"} {
		m, err := ParseConflictMode(s)
		if err != nil || m.String() != s {
			t.Errorf("ParseConflictMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseConflictMode("first"); err == nil {
		t.Error("ParseConflictMode accepted first")
	}
}

// A change claims its name when the owner holds no key there yet: the writer then commits it
// only if no other claim on the name committed since it was read. It withdraws from the name
// when it deletes the owner's keys there and wants none: the writer then drops the name's
// claim guard.
func TestChangeClaimsANameOnlyWithTheOwnersFirstKeysAndWithdrawsOnlyWithItsLast(t *testing.T) {
	v1, v2 := ep(name, 300, "10.0.0.1"), ep(name, 300, "10.0.0.2")
	for _, tc := range []struct {
		behaviour       string
		desired         []record.Endpoint
		current         []KV
		claim, withdraw bool
		ops             int
	}{
		{"a name with no keys is claimed", []record.Endpoint{v1}, nil, true, false, 2},
		{"a name only another owner holds is claimed (shared)", []record.Endpoint{v1}, []KV{theirs(other, v2, "10.0.0.2", 5)}, true, false, 2},
		{"a name beside an ownerless key is claimed", []record.Endpoint{v1}, []KV{raw(name, "x1", edns("10.0.0.9", ""), 5)}, true, false, 2},
		{"a new target of a name already held is no claim", []record.Endpoint{v2}, []KV{own(v1, "10.0.0.1", 5)}, false, false, 2},
		{"a changed TTL is no claim", []record.Endpoint{ep(name, 60, "10.0.0.1")}, []KV{own(v1, "10.0.0.1", 5)}, false, false, 1},
		{"a withdrawal is no claim", nil, []KV{own(v1, "10.0.0.1", 5)}, false, true, 2},
		{"a withdrawal beside another owner withdraws", nil, []KV{own(v1, "10.0.0.1", 5), theirs(other, v2, "10.0.0.2", 6)}, false, true, 2},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			p := Make(Input{Prefix: "skydns", Owner: me, Synced: true, Names: []string{name},
				Desired: tc.desired, Current: tc.current})
			if len(p.Changes) != 1 {
				t.Fatalf("changes %v, want one", p.Changes)
			}
			c := p.Changes[0]
			if c.Claim != tc.claim || c.Withdraws != tc.withdraw {
				t.Fatalf("Claim, Withdraws = %v, %v, want %v, %v (%v)", c.Claim, c.Withdraws, tc.claim, tc.withdraw, c)
			}
			// A claim or a withdrawal takes one operation more: the writer's claim guard.
			if c.Ops() != tc.ops {
				t.Errorf("Ops() = %d, want %d (%v)", c.Ops(), tc.ops, c)
			}
		})
	}
}

// A CNAME never shares its name with other data, and a name has one CNAME (RFC 1034 3.6.2):
// across owners the older claim keeps the name, in shared mode too, and the later one
// withdraws with a Conflict.
func TestCNAMEBesideOtherDataTheOlderClaimKeepsTheName(t *testing.T) {
	addr := ep(name, 300, "10.0.0.1")
	alias := ep(name, 300, "lb.example.net")
	theirAddr := ep(name, 300, "10.0.0.2")
	theirAlias := ep(name, 300, "other-lb.example.net")
	for _, tc := range []struct {
		behaviour string
		mode      ConflictMode
		desired   record.Endpoint
		current   []KV
		want      summary
	}{
		{"our A loses to an older CNAME of another owner", Shared, addr,
			[]KV{theirs(other, theirAlias, "other-lb.example.net", 5)},
			summary{conflicts: []string{name + " lost to " + other + "@5"}}},
		{"our older A keeps the name; the later CNAME is theirs to withdraw", Shared, addr,
			[]KV{own(addr, "10.0.0.1", 3), theirs(other, theirAlias, "other-lb.example.net", 5)},
			summary{}},
		{"our CNAME loses to older A records of another owner", Shared, alias,
			[]KV{theirs(other, theirAddr, "10.0.0.2", 5)},
			summary{conflicts: []string{name + " lost to " + other + "@5"}}},
		{"our CNAME loses to an older different CNAME", Shared, alias,
			[]KV{theirs(other, theirAlias, "other-lb.example.net", 5)},
			summary{conflicts: []string{name + " lost to " + other + "@5"}}},
		{"the same CNAME target is shared", Shared, alias,
			[]KV{theirs(other, alias, "lb.example.net", 5)},
			summary{changes: []string{change(name, puts(key(me, name, "lb.example.net")))}}},
		{"A records of two owners are a union", Shared, addr,
			[]KV{theirs(other, theirAddr, "10.0.0.2", 5)},
			summary{changes: []string{change(name, puts(key(me, name, "10.0.0.1")))}}},
		{"a key without owner counts: our CNAME loses to external-dns's A record", Shared, alias,
			[]KV{raw(name, "3e6bee2e", edns("10.0.0.9", ""), 5)},
			summary{conflicts: []string{name + " lost to @5"}}},
		{"text takes no part: our CNAME beside an older TXT registry record of external-dns", Shared, alias,
			[]KV{raw(name, "t1", `{"text":"\"heritage=external-dns,external-dns/owner=x\""}`, 5)},
			summary{changes: []string{change(name, puts(key(me, name, "lb.example.net")))}}},
		{"a value no reader can serve takes no part", Shared, alias,
			[]KV{raw(name, "junk", `not json`, 5)},
			summary{changes: []string{change(name, puts(key(me, name, "lb.example.net")))}}},
		{"both got in during a race: the later CNAME withdraws its key", Shared, alias,
			[]KV{own(alias, "lb.example.net", 9), theirs(other, theirAddr, "10.0.0.2", 5)},
			summary{changes: []string{change(name, nil, key(me, name, "lb.example.net"))},
				conflicts: []string{name + " lost to " + other + "@5"}}},
		{"an owner that turns its older addresses into a CNAME beside another owner's A records: the CNAME is a new key, the younger claim", Shared, alias,
			[]KV{own(addr, "10.0.0.1", 3), theirs(other, theirAddr, "10.0.0.2", 5)},
			summary{changes: []string{change(name, nil, key(me, name, "10.0.0.1"))},
				conflicts: []string{name + " lost to " + other + "@5"}}},
		{"a CNAME that stays keeps its age: beside another owner's later A records it keeps the name", Shared, alias,
			[]KV{own(alias, "lb.example.net", 3), theirs(other, theirAddr, "10.0.0.2", 5)},
			summary{}},
		{"exclusive mode: a CNAME clash with a key without owner is a conflict too", Exclusive, addr,
			[]KV{raw(name, "3e6bee2e", edns("lb.example.net", ""), 5)},
			summary{conflicts: []string{name + " lost to @5"}}},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			p := Make(Input{Prefix: "skydns", Owner: me, Conflicts: tc.mode, Synced: true,
				Names: []string{name}, Desired: []record.Endpoint{tc.desired}, Current: tc.current})
			if got := summarize(p); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			for _, c := range p.Conflicts {
				if c.Detail == "" || !strings.Contains(c.Detail, "CNAME") {
					t.Errorf("conflict %+v does not say what the CNAME rule found", c)
				}
			}
		})
	}
}
