package plan

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/txtregistry"
)

// registryText is the text external-dns's TXT registry writes, quotes included.
func registryText(owner string) string {
	return fmt.Sprintf(`"heritage=external-dns,external-dns/owner=%s,external-dns/resource=httproute/shop/app"`, owner)
}

// registryRecord is the key external-dns's coredns provider writes for a registry record at
// the registry name of name for recordType; keyOwner is the value's owner field (strict mode).
func registryRecord(cfg txtregistry.Config, n, recordType, labelsOwner, keyOwner string, rev int64) KV {
	v := fmt.Sprintf(`{"text":%q,"targetstrip":1}`, registryText(labelsOwner))
	if keyOwner != "" {
		v = fmt.Sprintf(`{"text":%q,"targetstrip":1,"owner":%q}`, registryText(labelsOwner), keyOwner)
	}
	return raw(cfg.Name(n, recordType), "4d2f0a11", v, rev)
}

func TestMakeTakesOverWhatTheTXTRegistrySaysExternalDNSHolds(t *testing.T) {
	reg := &txtregistry.Config{Owner: me}
	e := ep(name, 300, "203.0.113.10")
	cn := ep(name, 300, "lb.example.net")
	ownA := key(me, name, "203.0.113.10")
	ownCNAME := key(me, name, "lb.example.net")
	aRecord := registryRecord(*reg, name, "a", me, "", 5)
	cnameRecord := registryRecord(*reg, name, "cname", me, "", 5)
	ednsA := raw(name, "78b8eb29", edns("203.0.113.10", ""), 4)
	ednsCNAME := raw(name, "2587ced2", edns("lb.example.net", ""), 4)
	strictRecord := registryRecord(*reg, name, "a", me, me, 6)
	strictRecord.Key = record.NamePath("skydns", reg.Name(name, "a")) + "/5e5e5e5e"
	for _, tc := range []struct {
		name      string
		in        Input
		want      summary
		adopted   int
		conflicts bool
	}{
		{
			name: "an ownerless address registered to the owner is replaced and its registry record deleted, in one change",
			in:   Input{Desired: []record.Endpoint{e}, Current: []KV{ednsA, aRecord}},
			want: summary{changes: []string{change(name, puts(ownA), aRecord.Key, ednsA.Key)}}, adopted: 2,
		},
		{
			name: "a registry record of another owner leaves the ownerless key alone",
			in:   Input{Desired: []record.Endpoint{e}, Current: []KV{ednsA, registryRecord(*reg, name, "a", other, "", 5)}},
			want: summary{changes: []string{change(name, puts(ownA))}},
		},
		{
			name: "without a registry record an ownerless key is nobody's",
			in:   Input{Desired: []record.Endpoint{e}, Current: []KV{ednsA}},
			want: summary{changes: []string{change(name, puts(ownA))}},
		},
		{
			name: "a registration of the CNAME type does not cover an address",
			in:   Input{Desired: []record.Endpoint{e}, Current: []KV{ednsA, cnameRecord}},
			want: summary{changes: []string{change(name, puts(ownA), cnameRecord.Key)}}, adopted: 1,
		},
		{
			name: "external-dns's CNAME is taken over, not fought under the CNAME rule",
			in:   Input{Desired: []record.Endpoint{e}, Current: []KV{ednsCNAME, cnameRecord}},
			want: summary{changes: []string{change(name, puts(ownA), ednsCNAME.Key, cnameRecord.Key)}}, adopted: 2,
		},
		{
			name: "the old format: registry text in the record's own key registers it and every type",
			in: Input{Desired: []record.Endpoint{cn}, Current: []KV{
				raw(name, "0badf00d", fmt.Sprintf(`{"host":"lb.example.net","text":%q,"ttl":300,"targetstrip":1}`, registryText(me)), 3),
				ednsA,
			}},
			want: summary{changes: []string{change(name, puts(ownCNAME), record.NamePath("skydns", name)+"/0badf00d", ednsA.Key)}}, adopted: 2,
		},
		{
			name: "strict ownership: keys and registry records with the owner field are taken over",
			in: Input{Desired: []record.Endpoint{e}, Current: []KV{
				raw(name, "2587ced2", edns("203.0.113.10", me), 6), strictRecord, ednsA, aRecord,
			}},
			want: summary{changes: []string{change(name, puts(ownA), aRecord.Key, strictRecord.Key,
				record.NamePath("skydns", name)+"/2587ced2", ednsA.Key)}}, adopted: 3,
		},
		{
			name: "a name no longer wanted loses external-dns's keys and registry records",
			in:   Input{Current: []KV{ednsA, aRecord}},
			want: summary{changes: []string{change(name, nil, aRecord.Key, ednsA.Key)}}, adopted: 2,
		},
		{
			name: "upsert-only keeps what external-dns published for a name no longer wanted",
			in:   Input{Policy: UpsertOnly, Current: []KV{ednsA, aRecord}},
			want: summary{skipped: []string{name + ": policy"}},
		},
		{
			name: "nothing is deleted before the sources synced",
			in:   Input{Desired: []record.Endpoint{e}, Current: []KV{ednsA, aRecord}, Synced: false},
			want: summary{changes: []string{change(name, puts(ownA))}, skipped: []string{name + ": not-synced"}},
		},
		{
			name: "in exclusive mode external-dns's claim becomes ours and beats a younger owner",
			in: Input{Conflicts: Exclusive, Desired: []record.Endpoint{e}, Current: []KV{
				ednsA, aRecord, theirs(other, e, "203.0.113.99", 9),
			}},
			want: summary{changes: []string{change(name, puts(ownA), aRecord.Key, ednsA.Key)}}, adopted: 2,
		},
		{
			name: "keys of another owner are never taken, whatever a registry record says",
			in: Input{Desired: []record.Endpoint{e}, Current: []KV{
				raw(name, "11111111", edns("203.0.113.10", other), 2), registryRecord(*reg, name, "a", me, other, 2),
			}},
			want: summary{changes: []string{change(name, puts(ownA))}},
		},
		{
			name: "without Registry nothing is taken over",
			in:   Input{Desired: []record.Endpoint{e}, Current: []KV{ednsA, aRecord}},
			want: summary{changes: []string{change(name, puts(ownA))}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Prefix, in.Owner, in.Names = "skydns", me, []string{name}
			if tc.name != "nothing is deleted before the sources synced" {
				in.Synced = true
			}
			if tc.name != "without Registry nothing is taken over" {
				in.Registry = reg
			}
			p := Make(in)
			if got := summarize(p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan:\n got %+v\nwant %+v", got, tc.want)
			}
			adopted := 0
			for _, c := range p.Changes {
				adopted += c.Adopted
			}
			if adopted != tc.adopted {
				t.Errorf("adopted %d keys, want %d", adopted, tc.adopted)
			}
		})
	}
}

// A writer adopting with its own id differing from external-dns's (a renamed owner) takes the
// keys external-dns wrote with its strict ownership under the old id.
func TestMakeTakesOverKeysOfARenamedOwner(t *testing.T) {
	e := ep(name, 300, "203.0.113.10")
	old := raw(name, "2587ced2", edns("203.0.113.10", "legacy"), 6)
	p := Make(Input{Prefix: "skydns", Owner: me, Synced: true, Names: []string{name},
		Desired: []record.Endpoint{e}, Current: []KV{old}, Registry: &txtregistry.Config{Owner: "legacy"}})
	want := []string{change(name, puts(key(me, name, "203.0.113.10")), old.Key)}
	if got := summarize(p).changes; !reflect.DeepEqual(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
}

// A resync visits a registry name as a name of its own too (its text could be the old format
// at that name): the registry record is deleted by one change only, for a transaction must not
// name a key twice.
func TestMakeDeletesARegistryRecordFoundForTwoNamesOnce(t *testing.T) {
	reg := &txtregistry.Config{Owner: me}
	e := ep(name, 300, "203.0.113.10")
	rec := registryRecord(*reg, name, "a", me, "", 5)
	regName := reg.Name(name, "a")
	p := Make(Input{Prefix: "skydns", Owner: me, Synced: true, Names: []string{name, regName},
		Desired: []record.Endpoint{e}, Current: []KV{rec}, Registry: reg})
	seen := 0
	for _, c := range p.Changes {
		for _, d := range c.Deletes {
			if d == rec.Key {
				seen++
			}
		}
	}
	if seen != 1 {
		t.Errorf("the registry record is deleted by %d changes, want 1: %+v", seen, summarize(p))
	}
}

// A name's change is the same whether its registry names are in scope or not (a full resync
// visits them, a reconcile of the name alone does not): the registry record goes with the
// change of the name it registers, and the registry name has no change of its own. A dry run,
// which tells each change once, would otherwise tell the name twice and the registry record
// as a name "gatewaydns would drop".
func TestMakePlansARegistryRecordWithTheNameItRegistersWhateverTheScope(t *testing.T) {
	reg := &txtregistry.Config{Owner: me}
	e := ep(name, 300, "203.0.113.10")
	rec := registryRecord(*reg, name, "a", me, "", 5)
	ednsA := raw(name, "78b8eb29", edns("203.0.113.10", ""), 4)
	want := []string{change(name, puts(key(me, name, "203.0.113.10")), rec.Key, ednsA.Key)}
	for _, scope := range [][]string{{name}, {name, reg.Name(name, "a")}, {reg.Name(name, "a"), name, reg.Name(name, "cname")}} {
		p := Make(Input{Prefix: "skydns", Owner: me, Synced: true, Names: scope,
			Desired: []record.Endpoint{e}, Current: []KV{rec, ednsA}, Registry: reg})
		if got := summarize(p).changes; !reflect.DeepEqual(got, want) {
			t.Errorf("names %v: changes %q, want %q", scope, got, want)
		}
	}
}

// A writer plans a large reconcile in parts: with the parts sharing Input.Deleted, a registry
// record found for names in two parts is deleted by the first part's change only, as in one plan.
func TestMakeDeletesARegistryRecordFoundInTwoPartsOnce(t *testing.T) {
	reg := &txtregistry.Config{Owner: me}
	e := ep(name, 300, "203.0.113.10")
	rec := registryRecord(*reg, name, "a", me, "", 5)
	regName := reg.Name(name, "a")
	deleted := map[string]bool{}
	seen := 0
	for _, part := range [][]string{{name}, {regName}} {
		p := Make(Input{Prefix: "skydns", Owner: me, Synced: true, Names: part,
			Desired: []record.Endpoint{e}, Current: []KV{rec}, Registry: reg, Deleted: deleted})
		for _, c := range p.Changes {
			for _, d := range c.Deletes {
				if d == rec.Key {
					seen++
				}
			}
		}
	}
	if seen != 1 {
		t.Errorf("the registry record is deleted by %d changes of the two parts, want 1", seen)
	}
	if !deleted[rec.Key] {
		t.Errorf("Deleted = %v, want it to hold %s", deleted, rec.Key)
	}
}

// A change that deletes external-dns's registry records and nothing else (a registry record
// left for a name that has no record) says so, for a dry run logs it: it is no name with
// records that the writer would drop. A name dropped with its records does not say it.
func TestMakeSaysAChangeDeletesRegistryRecordsOnly(t *testing.T) {
	reg := &txtregistry.Config{Owner: me}
	rec := registryRecord(*reg, name, "aaaa", me, "", 5)
	ednsA := raw(name, "78b8eb29", edns("203.0.113.10", ""), 4)
	aRec := registryRecord(*reg, name, "a", me, "", 5)
	for _, tc := range []struct {
		what    string
		current []KV
		want    string
	}{
		{"a registry record alone", []KV{rec}, change(name, nil, rec.Key) + " (external-dns registry records only)"},
		{"a name with its record and registry record", []KV{ednsA, aRec}, change(name, nil, aRec.Key, ednsA.Key)},
	} {
		p := Make(Input{Prefix: "skydns", Owner: me, Synced: true, Names: []string{name}, Current: tc.current, Registry: reg})
		if got := summarize(p).changes; len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: changes %q, want %q", tc.what, got, tc.want)
		}
	}
}
