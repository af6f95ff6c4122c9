package index

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/packed"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/steer"
)

// owned is the value an owner writes for host, with a steering object ("" for none).
func owned(rev int64, name, owner, host, steering string) record.KV {
	v := fmt.Sprintf(`{"host":%q,"owner":%q`, host, owner)
	if steering != "" {
		v += `,"steering":` + steering
	}
	return record.KV{Key: record.Key(record.DefaultPrefix, name, owner, host), Value: []byte(v + "}"), Revision: rev, Created: rev}
}

// hosts are the addresses answered to an A question for name asked by a, sorted.
func hosts(t *testing.T, ix *Index, name string, a Asker) string {
	t.Helper()
	addrs, ok, err := ix.AppendAnswer(nil, name, dns.TypeA, a)
	if !ok || err != nil {
		t.Fatalf("%s: ok %v, err %v", name, ok, err)
	}
	var out []string
	for _, ad := range addrs {
		out = append(out, ad.IP.String())
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

const checked = `{"healthCheck":"tcp://:443"}`

func down(host string, d bool) HealthChange {
	return HealthChange{Target: CheckTarget{Host: host, Check: "tcp://:443"}, Down: d}
}

func TestSteeredNamesAnswerByPolicyHealthAndPlace(t *testing.T) {
	loc := steerLocality(t)
	from := func(ip string) Asker {
		return Asker{Locality: loc, W: &test.ResponseWriter{RemoteIP: ip}}
	}
	for _, tc := range []struct {
		behaviour string
		records   []record.KV
		changes   []HealthChange
		asker     Asker
		want      string
	}{
		{behaviour: "no policy: the union, as today",
			records: []record.KV{owned(1, "app.zone.test", "eu1", "10.0.1.1", ""), owned(2, "app.zone.test", "us1", "10.0.2.1", "")},
			want:    "10.0.1.1,10.0.2.1"},
		{behaviour: "priorities: the lowest tier alone",
			records: []record.KV{owned(1, "app.zone.test", "eu1", "10.0.1.1", `{"priority":1}`), owned(2, "app.zone.test", "us1", "10.0.2.1", `{"priority":2}`)},
			want:    "10.0.1.1"},
		{behaviour: "the primary's check down: the standby",
			records: []record.KV{owned(1, "app.zone.test", "eu1", "10.0.1.1", `{"priority":1,"healthCheck":"tcp://:443"}`), owned(2, "app.zone.test", "us1", "10.0.2.1", `{"priority":2}`)},
			changes: []HealthChange{down("10.0.1.1", true)}, want: "10.0.2.1"},
		{behaviour: "down and up again: the primary",
			records: []record.KV{owned(1, "app.zone.test", "eu1", "10.0.1.1", `{"priority":1,"healthCheck":"tcp://:443"}`), owned(2, "app.zone.test", "us1", "10.0.2.1", `{"priority":2}`)},
			changes: []HealthChange{down("10.0.1.1", true), down("10.0.1.1", false)}, want: "10.0.1.1"},
		{behaviour: "one of an owner's addresses down: its others",
			records: []record.KV{owned(1, "app.zone.test", "eu1", "10.0.1.1", checked), owned(2, "app.zone.test", "eu1", "10.0.1.2", checked)},
			changes: []HealthChange{down("10.0.1.1", true)}, want: "10.0.1.2"},
		{behaviour: "every owner down: every address (fail open)",
			records: []record.KV{owned(1, "app.zone.test", "eu1", "10.0.1.1", checked), owned(2, "app.zone.test", "us1", "10.0.2.1", checked)},
			changes: []HealthChange{down("10.0.1.1", true), down("10.0.2.1", true)}, want: "10.0.1.1,10.0.2.1"},
		{behaviour: "a client of eu1's network: eu1's addresses, without any policy",
			records: []record.KV{owned(1, "app.zone.test", "eu1", "10.0.1.1", ""), owned(2, "app.zone.test", "us1", "10.0.2.1", "")},
			asker:   from("192.0.2.7"), want: "10.0.1.1"},
		{behaviour: "a client of us1's region: us1, before a lower tier elsewhere",
			records: []record.KV{owned(1, "app.zone.test", "eu1", "10.0.1.1", `{"priority":0}`), owned(2, "app.zone.test", "us1", "10.0.2.1", `{"priority":1}`)},
			asker:   from("198.51.100.9"), want: "10.0.2.1"},
		{behaviour: "a client's own cluster down: the others by policy",
			records: []record.KV{owned(1, "app.zone.test", "eu1", "10.0.1.1", checked), owned(2, "app.zone.test", "us1", "10.0.2.1", "")},
			changes: []HealthChange{down("10.0.1.1", true)}, asker: from("192.0.2.7"), want: "10.0.2.1"},
		{behaviour: "a client placed nowhere: the union",
			records: []record.KV{owned(1, "app.zone.test", "eu1", "10.0.1.1", ""), owned(2, "app.zone.test", "us1", "10.0.2.1", "")},
			asker:   from("203.0.113.1"), want: "10.0.1.1,10.0.2.1"},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			ix := New(Options{Prefix: record.DefaultPrefix})
			ix.Load(ix.Root(), tc.records)
			ix.ApplyHealth(tc.changes)
			checkSteeredAnswers(t, ix, "app.zone.test.", tc.asker, tc.want)
		})
	}
}

// checkSteeredAnswers checks that an A question for name asked by a answers want every time
// (whatever the draw), by the addresses and by the records (plugin.A's way).
func checkSteeredAnswers(t *testing.T, ix *Index, name string, a Asker, want string) {
	t.Helper()
	for range 20 {
		if got := hosts(t, ix, name, a); got != want {
			t.Fatalf("A %s: %s, want %s", name, got, want)
		}
	}
	sx, err := ix.RecordsAsked(query(name, dns.TypeA), false, a)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sx {
		got = append(got, s.Host)
	}
	slices.Sort(got)
	if strings.Join(got, ",") != want {
		t.Fatalf("records of %s: %v, want %s", name, got, want)
	}
}

// steerLocality places 192.0.2.0/24 in eu1's cluster (region eu), 198.51.100.0/24 in region us
// (us1's).
func steerLocality(t *testing.T) *steer.Locality {
	t.Helper()
	var c steer.LocalityConfig
	for _, o := range [][]string{
		{"locality-region", "eu", "eu1"}, {"locality-region", "us", "us1"},
		{"locality-cluster", "eu1", "192.0.2.0/24"}, {"locality-region-networks", "us", "198.51.100.0/24"},
	} {
		if _, err := steer.Options.Parse(&c, o[0], o[1:]); err != nil {
			t.Fatal(err)
		}
	}
	loc, err := c.Build()
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestWeightsShareTheAnswersOverManyQuestions: 90/10 within 3 points over 10,000 questions, an
// owner's addresses answered together.
func TestWeightsShareTheAnswersOverManyQuestions(t *testing.T) {
	ix := New(Options{})
	ix.Load(ix.Root(), []record.KV{
		owned(1, "app.zone.test", "eu1", "10.0.1.1", `{"weight":90}`), owned(2, "app.zone.test", "eu1", "10.0.1.2", `{"weight":90}`),
		owned(3, "app.zone.test", "us1", "10.0.2.1", `{"weight":10}`),
	})
	counts := map[string]int{}
	const n = 10000
	for range n {
		counts[hosts(t, ix, "app.zone.test.", Asker{})]++
	}
	if len(counts) != 2 {
		t.Fatalf("answers %v, want eu1's two addresses together or us1's", counts)
	}
	if eu := float64(counts["10.0.1.1,10.0.1.2"]) / n; eu < 0.87 || eu > 0.93 {
		t.Fatalf("eu1 answered %.3f of the questions, want 0.90 +- 0.03 (%v)", eu, counts)
	}
}

// TestSteeredNamesKeepNothingPacked: a name answered by a choice per question keeps no packed
// reply (the handler and the batched path would answer it without choosing); a name without a
// policy keeps its own, unless the stanza places clients and it has several owners.
func TestSteeredNamesKeepNothingPacked(t *testing.T) {
	ix := New(Options{})
	ix.Load(ix.Root(), []record.KV{
		owned(1, "plain.zone.test", "eu1", "10.0.1.1", ""), owned(2, "plain.zone.test", "us1", "10.0.2.1", ""),
		owned(3, "steered.zone.test", "eu1", "10.0.1.1", `{"weight":90}`), owned(4, "steered.zone.test", "us1", "10.0.2.1", `{"weight":10}`),
	})
	a := packed.NewNoData(packed.Key{Qtype: dns.TypeMX})
	for _, tc := range []struct {
		name    string
		placing bool
		kept    bool
	}{
		{"plain.zone.test.", false, true},
		{"plain.zone.test.", true, false},
		{"steered.zone.test.", false, false},
	} {
		p := ix.Packed(tc.name, "/skydns/test/zone/")
		if kept := ix.KeepFor(p.Ref, tc.name, p.Name.With(packed.NewOwner(), a), tc.placing); kept != tc.kept {
			t.Errorf("%s (placing %v): kept %v, want %v", tc.name, tc.placing, kept, tc.kept)
		}
	}
}

// TestFailOpenIsToldWhenItStartsAndEnds: the callback hears a name whose every owner is down,
// and again when one is back; the count says how many names fail open.
func TestFailOpenIsToldWhenItStartsAndEnds(t *testing.T) {
	var told []string
	ix := New(Options{FailOpen: func(name string, failing bool, names int) {
		told = append(told, fmt.Sprintf("%s %v %d", name, failing, names))
	}})
	ix.Load(ix.Root(), []record.KV{owned(1, "app.zone.test", "eu1", "10.0.1.1", checked), owned(2, "app.zone.test", "us1", "10.0.2.1", checked)})
	ix.ApplyHealth([]HealthChange{down("10.0.1.1", true)})
	ix.ApplyHealth([]HealthChange{down("10.0.2.1", true)})
	if ix.FailingOpen() != 1 {
		t.Fatalf("failing open: %d names, want 1", ix.FailingOpen())
	}
	ix.ApplyHealth([]HealthChange{down("10.0.2.1", false)})
	want := []string{"app.zone.test. true 1", "app.zone.test. false 0"}
	if !slices.Equal(told, want) {
		t.Fatalf("told %q, want %q", told, want)
	}
}

// TestCheckTargetsFollowTheRecords: the targets come and go with the records that declare them,
// and the channel says when.
func TestCheckTargetsFollowTheRecords(t *testing.T) {
	ix := New(Options{})
	ix.Load(ix.Root(), []record.KV{owned(1, "app.zone.test", "eu1", "10.0.1.1", checked), owned(2, "app.zone.test", "us1", "10.0.2.1", "")})
	targets, changed := ix.CheckTargets()
	if !slices.Equal(targets, []CheckTarget{{"10.0.1.1", "tcp://:443"}}) {
		t.Fatalf("targets %v", targets)
	}
	ix.Apply([]record.Change{{KV: owned(3, "app.zone.test", "us1", "10.0.2.1", checked)}})
	select {
	case <-changed:
	case <-time.After(time.Second):
		t.Fatal("no word of a new target")
	}
	if targets, _ = ix.CheckTargets(); len(targets) != 2 {
		t.Fatalf("targets %v, want both", targets)
	}
	ix.Apply([]record.Change{{KV: record.KV{Key: owned(0, "app.zone.test", "eu1", "10.0.1.1", "").Key, Revision: 4}, Deleted: true}})
	if targets, _ = ix.CheckTargets(); !slices.Equal(targets, []CheckTarget{{"10.0.2.1", "tcp://:443"}}) {
		t.Fatalf("targets %v after a delete", targets)
	}
}
