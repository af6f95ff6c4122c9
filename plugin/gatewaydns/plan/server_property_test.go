package plan_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// The writer's verdict is what the server answers: over random sequences of owners' writes
// to one name (addresses, a CNAME, TXT, SRV and MX records, and keys without owner written by
// hand), each owner's plan is made on what etcd holds, and its change committed as the writer
// does, in one transaction. After every write, for every owner, the plan's verdict (a
// Conflict, and who holds the name) is compared with the answers of the index loaded with
// what etcd would hold had the owner written its records regardless: the plan reports a
// Conflict exactly when the server would not answer one of the owner's records, and then the
// winner it names is in the answers. The index fed by the writes one by one answers as one
// loaded with the whole store.
func TestWritersVerdictIsWhatTheServerAnswers(t *testing.T) {
	seen := map[string]int{} // verdicts checked, by kind, so that the property is not vacuous
	for seed := range uint64(250) {
		w := newWorld(seed)
		for step := 0; step < 16; step++ {
			w.step()
			w.checkLiveIndex(t)
			for _, o := range owners {
				w.checkVerdict(t, o, seen)
			}
			if t.Failed() {
				t.Fatalf("seed %d, after:\n%s", seed, strings.Join(w.history, "\n"))
			}
		}
	}
	t.Logf("verdicts checked: %v", seen)
	for _, kind := range []string{"served", "conflict: CNAME", "conflict: data", "conflict: text", "conflict: a key without owner"} {
		if seen[kind] < 10 {
			t.Errorf("only %d verdicts of kind %q checked (%v): the sequences do not reach the rule", seen[kind], kind, seen)
		}
	}
}

const (
	propName   = "n.zone.test"
	propPrefix = "skydns"
)

var owners = []string{"c1", "c2", "c3"}

// world is etcd (a key-value store with revisions), what each owner wants of the name, and
// the server's index fed by every write.
type world struct {
	rnd     *rand.Rand
	rev     int64
	kvs     map[string]record.KV
	wants   map[string]*record.Endpoint
	live    *index.Index
	history []string
}

func newWorld(seed uint64) *world {
	return &world{rnd: rand.New(rand.NewPCG(seed, 28)), kvs: map[string]record.KV{},
		wants: map[string]*record.Endpoint{}, live: loaded(nil)}
}

// step is one write: an owner that wants something new of the name plans and commits, or a
// key without owner is put or deleted by hand.
func (w *world) step() {
	if w.rnd.IntN(6) == 0 {
		w.byHand()
		return
	}
	o := owners[w.rnd.IntN(len(owners))]
	w.wants[o] = w.randomEndpoint()
	p := w.plan(o, w.current(""))
	for _, c := range p.Changes {
		w.commit(w.kvs, c, true)
	}
	w.history = append(w.history, fmt.Sprintf("rev %d: %s wants %s: %s %+v", w.rev, o, describe(w.wants[o]), p.Changes, p.Conflicts))
}

// randomEndpoint is what an owner may want of the name; nil: nothing.
func (w *world) randomEndpoint() *record.Endpoint {
	ep := record.Endpoint{Name: propName, TTL: 60}
	addresses := func() {
		for _, ip := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"} {
			if w.rnd.IntN(2) == 0 || len(ep.Targets) == 0 && ip == "10.0.0.3" {
				ep.Targets = append(ep.Targets, ip)
			}
		}
	}
	switch w.rnd.IntN(8) {
	case 0:
		return nil
	case 1, 2:
		addresses()
	case 3, 4:
		ep.Targets = []string{[]string{"a.example.net", "b.example.net"}[w.rnd.IntN(2)]}
	case 5:
		ep.Records = []record.Typed{record.TXT([]string{"v=1", "v=2"}[w.rnd.IntN(2)])}
	case 6:
		addresses()
		ep.Records = []record.Typed{record.TXT("v=1")}
	case 7:
		ep.Records = []record.Typed{[]record.Typed{record.SRV(10, 5, 443, "a.example.net"), record.MX(10, "mx.example.net")}[w.rnd.IntN(2)]}
	}
	return &ep
}

// byHand puts or deletes a key without owner, as a person with etcdctl or external-dns without
// strict ownership does.
func (w *world) byHand() {
	key := fmt.Sprintf("%s/x%d", record.NamePath(propPrefix, propName), w.rnd.IntN(2))
	if _, ok := w.kvs[key]; ok && w.rnd.IntN(2) == 0 {
		w.commit(w.kvs, plan.Change{Deletes: []string{key}}, true)
		w.history = append(w.history, fmt.Sprintf("rev %d: by hand: -%s", w.rev, key))
		return
	}
	value := []string{`{"host":"10.0.0.9"}`, `{"host":"c.example.net"}`, `{"text":"v=9"}`}[w.rnd.IntN(3)]
	w.commit(w.kvs, plan.Change{Puts: []plan.Put{{Key: key, Value: []byte(value)}}}, true)
	w.history = append(w.history, fmt.Sprintf("rev %d: by hand: +%s %s", w.rev, key, value))
}

// commit applies a change to kvs in one transaction, as etcd would: a put keeps a key's create
// revision. When live, it is the store's own: the revision moves and the index is fed.
func (w *world) commit(kvs map[string]record.KV, c plan.Change, live bool) {
	rev := w.rev + 1
	var changes []record.Change
	for _, p := range c.Puts {
		kv := record.KV{Key: p.Key, Value: p.Value, Revision: rev, Created: rev}
		if old, ok := kvs[p.Key]; ok {
			kv.Created = old.Created
		}
		kvs[p.Key] = kv
		changes = append(changes, record.Change{KV: kv})
	}
	for _, k := range c.Deletes {
		delete(kvs, k)
		changes = append(changes, record.Change{KV: record.KV{Key: k, Revision: rev}, Deleted: true})
	}
	if live {
		w.rev = rev
		w.live.Apply(changes)
	}
}

// current is what a writer reads back at the name: every key, or only owner's when not "".
func (w *world) current(owner string) []plan.KV {
	var out []plan.KV
	for _, k := range slices.Sorted(maps.Keys(w.kvs)) {
		kv := w.kvs[k]
		if owner == "" || record.OwnerOf(kv.Value) == owner {
			out = append(out, plan.KV{Key: kv.Key, Value: kv.Value, CreateRevision: kv.Created, ModRevision: kv.Revision})
		}
	}
	return out
}

func (w *world) plan(owner string, current []plan.KV) plan.Plan {
	in := plan.Input{Prefix: propPrefix, Owner: owner, Synced: true, Names: []string{propName}, Current: current}
	if ep := w.wants[owner]; ep != nil {
		in.Desired = []record.Endpoint{*ep}
	}
	return plan.Make(in)
}

// checkVerdict compares owner's verdict with the answers of the server had the owner written
// what it wants regardless of other owners.
func (w *world) checkVerdict(t *testing.T, owner string, seen map[string]int) {
	t.Helper()
	if w.wants[owner] == nil {
		return
	}
	verdict := w.plan(owner, w.current(""))
	regardless := maps.Clone(w.kvs)
	for _, c := range w.plan(owner, w.current(owner)).Changes {
		w.commit(regardless, c, false)
	}
	ix := loaded(regardless)
	var unanswered []string
	for _, kv := range regardless {
		if record.OwnerOf(kv.Value) == owner && !answered(t, ix, kv) {
			unanswered = append(unanswered, kv.Key+" "+string(kv.Value))
		}
	}
	switch {
	case len(verdict.Conflicts) == 0 && len(unanswered) > 0:
		t.Errorf("%s: no Conflict, but the server would not answer %q", owner, unanswered)
	case len(verdict.Conflicts) > 0 && len(unanswered) == 0:
		t.Errorf("%s: Conflict %+v, but the server would answer every record of its", owner, verdict.Conflicts)
	case len(verdict.Conflicts) > 0:
		c := verdict.Conflicts[0]
		if !holds(t, ix, regardless, c.Winner) {
			t.Errorf("%s: Conflict names %q the winner, whose records the server does not answer", owner, c.Winner)
		}
		seen[conflictKind(c)]++
	default:
		seen["served"]++
	}
}

// conflictKind sorts a Conflict by what won, for the count of verdicts checked.
func conflictKind(c plan.Conflict) string {
	switch {
	case c.Winner == "":
		return "conflict: a key without owner"
	case strings.Contains(c.Detail, "with text"):
		return "conflict: text"
	case strings.HasPrefix(c.Detail, "the name is a CNAME"):
		return "conflict: CNAME"
	}
	return "conflict: data"
}

// checkLiveIndex compares the index fed write by write with one loaded with the whole store.
func (w *world) checkLiveIndex(t *testing.T) {
	t.Helper()
	whole := loaded(w.kvs)
	for _, qtype := range []uint16{dns.TypeA, dns.TypeTXT, dns.TypeCNAME} {
		if got, want := answerKeys(t, w.live, qtype), answerKeys(t, whole, qtype); !slices.Equal(got, want) {
			t.Errorf("%s: the index fed by the writes answers %q, one loaded with the store %q", dns.TypeToString[qtype], got, want)
		}
	}
}

func loaded(kvs map[string]record.KV) *index.Index {
	ix := index.New(index.Options{})
	ix.Load(ix.Root(), slices.Collect(maps.Values(kvs)))
	return ix
}

// services is the index's answer to a question for the name, as the handler gets it.
func services(t *testing.T, ix *index.Index, qtype uint16) []msg.Service {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(propName), qtype)
	sx, err := ix.Services(context.Background(), request.Request{Req: m}, false, plugin.Options{})
	if err != nil && !ix.IsNameError(err) {
		t.Fatalf("%s %s: %v", propName, dns.TypeToString[qtype], err)
	}
	return sx
}

func answerKeys(t *testing.T, ix *index.Index, qtype uint16) []string {
	var keys []string
	for _, s := range services(t, ix, qtype) {
		keys = append(keys, s.Key)
	}
	slices.Sort(keys)
	return keys
}

// answered reports whether the server answers kv where the CNAME rule rules: an address to an
// A or AAAA question, a CNAME to an A question (its own key, or another with the same target),
// text to a TXT question. SRV and MX answers are not ruled.
func answered(t *testing.T, ix *index.Index, kv record.KV) bool {
	v, err := record.Decode(kv.Key, kv.Value)
	if err != nil {
		t.Fatalf("%s: %v", kv.Key, err)
	}
	qtype := dns.TypeTXT
	switch record.KindOf(&v.Service) {
	case record.Target:
		return true
	case record.Address:
		qtype = dns.TypeA
		if net.ParseIP(v.Host).To4() == nil {
			qtype = dns.TypeAAAA
		}
	case record.CNAME:
		qtype = dns.TypeA
	}
	for _, s := range services(t, ix, qtype) {
		if s.Key == kv.Key || record.KindOf(&v.Service) == record.CNAME && record.KindOf(&s) == record.CNAME &&
			record.NormalizeName(s.Host) == record.NormalizeName(v.Host) {
			return true
		}
	}
	return false
}

// holds reports whether the server answers a record of owner ("": a key without owner) to an
// A or a TXT question; kvs is what it was loaded with.
func holds(t *testing.T, ix *index.Index, kvs map[string]record.KV, owner string) bool {
	for _, qtype := range []uint16{dns.TypeA, dns.TypeTXT} {
		for _, s := range services(t, ix, qtype) {
			if record.OwnerOf(kvs[s.Key].Value) == owner {
				return true
			}
		}
	}
	return false
}

func describe(ep *record.Endpoint) string {
	if ep == nil {
		return "nothing"
	}
	var parts []string
	parts = append(parts, ep.Targets...)
	for _, r := range ep.Records {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ",")
}
