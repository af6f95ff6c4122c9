package plan

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// typedKey is our key for the typed record r of name n.
func typedKey(owner, n string, r record.Typed) string { return r.Key("skydns", n, owner) }

func ownTyped(owner string, e record.Endpoint, r record.Typed, rev int64) KV {
	return KV{Key: typedKey(owner, e.Name, r), Value: record.NewTypedValue(e, owner, r).Encode(), CreateRevision: rev, ModRevision: rev}
}

var (
	txt     = record.TXT("v=spf1 include:_spf.example.net -all")
	txtCase = record.TXT("V=SPF1 INCLUDE:_spf.example.net -all")
	srv     = record.SRV(10, 5, 443, "lb.example.net")
	mx      = record.MX(10, "mail.example.net")
)

// TXT, SRV and MX records are one key each, in the SkyDNS format the stock etcd plugin answers,
// at a suffix of their canonical form; A keys and values stay as they were.
func TestTypedRecordsKeysAndValues(t *testing.T) {
	e := record.Endpoint{Name: name, Targets: []string{"10.0.0.1"}, TTL: 60,
		Records: record.SortTyped([]record.Typed{txt, srv, mx, txtCase}),
		Sources: []record.ObjectRef{{Kind: "DNSEndpoint", Namespace: "ns", Name: "e"}}}
	p := Make(Input{Prefix: "skydns", Owner: me, Synced: true, Names: []string{name}, Desired: []record.Endpoint{e}})
	if len(p.Changes) != 1 || len(p.Conflicts) != 0 || len(p.Skipped) != 0 {
		t.Fatalf("plan %+v", p)
	}
	got := map[string]string{}
	for _, put := range p.Changes[0].Puts {
		got[put.Key] = string(put.Value)
	}
	src := `"owner":"` + me + `","sources":["DNSEndpoint/ns/e"]`
	want := map[string]string{
		key(me, name, "10.0.0.1"):   `{"host":"10.0.0.1","ttl":60,"targetstrip":1,` + src + `}`,
		typedKey(me, name, txt):     `{"text":"v=spf1 include:_spf.example.net -all","ttl":60,` + src + `}`,
		typedKey(me, name, txtCase): `{"text":"V=SPF1 INCLUDE:_spf.example.net -all","ttl":60,` + src + `}`,
		typedKey(me, name, srv):     `{"host":"lb.example.net","port":443,"priority":10,"weight":5,"ttl":60,` + src + `}`,
		typedKey(me, name, mx):      `{"host":"mail.example.net","priority":10,"mail":true,"ttl":60,` + src + `}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("puts\n got  %v\n want %v", got, want)
	}
	// The A record's key and value are those of an endpoint without typed records.
	plain := e
	plain.Records = nil
	if v := string(record.NewValue(plain, me, "10.0.0.1").Encode()); v != want[key(me, name, "10.0.0.1")] {
		t.Fatalf("the A value changed: %s", v)
	}
	// TXT data is case-sensitive: two texts differing in case are two keys.
	if typedKey(me, name, txt) == typedKey(me, name, txtCase) {
		t.Fatal("TXT records differing in case share a key")
	}
	// Every value decodes as the readers decode it.
	for k, v := range want {
		dv, err := record.Decode(k, []byte(v))
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if k == typedKey(me, name, srv) || k == typedKey(me, name, mx) {
			if kind := record.KindOf(&dv.Service); kind != record.Target {
				t.Errorf("%s: kind %v, want Target (not a CNAME)", v, kind)
			}
		}
	}
}

// A resync of an unchanged endpoint with typed records writes nothing; a changed SRV target
// replaces its key in the same change; a dropped TXT record is deleted.
func TestTypedRecordsResync(t *testing.T) {
	e := record.Endpoint{Name: name, TTL: 60, Records: record.SortTyped([]record.Typed{txt, srv, mx})}
	cur := []KV{ownTyped(me, e, txt, 3), ownTyped(me, e, srv, 3), ownTyped(me, e, mx, 3)}
	in := Input{Prefix: "skydns", Owner: me, Synced: true, Names: []string{name}, Desired: []record.Endpoint{e}, Current: cur}
	if p := Make(in); len(p.Changes)+len(p.Conflicts)+len(p.Skipped) != 0 {
		t.Fatalf("a resync plans %+v", summarize(p))
	}

	srv2 := record.SRV(10, 5, 8443, "lb.example.net")
	moved := record.Endpoint{Name: name, TTL: 60, Records: record.SortTyped([]record.Typed{srv2, mx})}
	in.Desired = []record.Endpoint{moved}
	got := summarize(Make(in))
	want := summary{changes: []string{change(name, puts(typedKey(me, name, srv2)),
		sortedStrings(typedKey(me, name, srv), typedKey(me, name, txt))...)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func sortedStrings(s ...string) []string {
	if s[0] > s[1] {
		s[0], s[1] = s[1], s[0]
	}
	return s
}

// The CNAME rule across owners, as the server answers (index): SRV and MX answers are not
// ruled, and their host name is no CNAME, so they neither lose a name nor take it; text meets
// a CNAME in TXT answers only, where the older keeps the name.
func TestTypedRecordsCNAMERule(t *testing.T) {
	alias := ep(name, 300, "lb.example.net")
	theirAddr := ep(name, 300, "10.0.0.2")
	srvOnly := record.Endpoint{Name: name, TTL: 300, Records: []record.Typed{srv}}
	mxAndA := record.Endpoint{Name: name, TTL: 300, Targets: []string{"10.0.0.1"}, Records: []record.Typed{mx}}
	txtOnly := record.Endpoint{Name: name, TTL: 300, Records: []record.Typed{txt}}
	for _, tc := range []struct {
		behaviour string
		desired   record.Endpoint
		current   []KV
		want      summary
		detail    string // what a conflict's detail names besides the CNAME
	}{
		{"our MX beside another owner's older SRV and A records: no CNAME anywhere, a union", mxAndA,
			[]KV{ownTyped(other, srvOnly, srv, 5), theirs(other, theirAddr, "10.0.0.2", 5)},
			summary{changes: []string{change(name, sortedStrings(key(me, name, "10.0.0.1"), typedKey(me, name, mx)))}}, ""},
		{"our A beside another owner's older MX: the MX's host is no CNAME", ep(name, 300, "10.0.0.1"),
			[]KV{ownTyped(other, mxAndA, mx, 5)},
			summary{changes: []string{change(name, puts(key(me, name, "10.0.0.1")))}}, ""},
		{"our CNAME beside another owner's older SRV record: the server answers A with the CNAME, SRV with both", alias,
			[]KV{ownTyped(other, srvOnly, srv, 5)},
			summary{changes: []string{change(name, puts(key(me, name, "lb.example.net")))}}, ""},
		{"our SRV beside another owner's older CNAME: SRV answers are not ruled", srvOnly,
			[]KV{theirs(other, alias, "lb.example.net", 5)},
			summary{changes: []string{change(name, puts(typedKey(me, name, srv)))}}, ""},
		{"our TXT loses to another owner's older CNAME: a TXT question gets the CNAME", txtOnly,
			[]KV{theirs(other, alias, "lb.example.net", 5)},
			summary{conflicts: []string{name + " lost to " + other + "@5"}}, "text"},
		{"our CNAME beside another owner's older TXT: an A question still gets the CNAME", alias,
			[]KV{ownTyped(other, txtOnly, txt, 5)},
			summary{changes: []string{change(name, puts(key(me, name, "lb.example.net")))}}, ""},
		{"our TXT beside another owner's younger CNAME: ours is the older claim", txtOnly,
			[]KV{ownTyped(me, txtOnly, txt, 3), theirs(other, alias, "lb.example.net", 5)},
			summary{}, ""},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			p := Make(Input{Prefix: "skydns", Owner: me, Synced: true,
				Names: []string{name}, Desired: []record.Endpoint{tc.desired}, Current: tc.current})
			if got := summarize(p); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			for _, c := range p.Conflicts {
				if !strings.Contains(c.Detail, "CNAME") || !strings.Contains(c.Detail, tc.detail) {
					t.Errorf("conflict detail %q does not name the CNAME and the %s", c.Detail, tc.detail)
				}
			}
		})
	}
}

// A typed record's key held by another owner (or none) is not put over.
func TestTypedRecordKeyHeldByOther(t *testing.T) {
	e := record.Endpoint{Name: name, Records: []record.Typed{txt}}
	k := typedKey(me, name, txt)
	p := Make(Input{Prefix: "skydns", Owner: me, Synced: true, Names: []string{name}, Desired: []record.Endpoint{e},
		Current: []KV{{Key: k, Value: []byte(`{"text":"x"}`), CreateRevision: 2}}})
	if len(p.Changes) != 0 || len(p.Skipped) != 1 || p.Skipped[0].Reason != ReasonNotOwned || !strings.Contains(p.Skipped[0].Detail, "TXT") {
		t.Fatalf("plan %+v", p)
	}
}
