package gatewaydns

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/packed"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/prepacked"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// TestSteeringOptions: the health checker's and the locality's options read in the stanza, and
// their errors name the line, a wrong combination the line of its option too.
func TestSteeringOptions(t *testing.T) {
	cfg := mustParse(t, `gatewaydns {
		healthcheck-interval 1s
		healthcheck-timeout 300ms
		healthcheck-down-after 3
		locality-region eu eu1
		locality-cluster eu1 10.1.0.0/16
	}`)
	h := cfg.steering.health
	if h.Interval != time.Second || h.Timeout != 300*time.Millisecond || h.DownAfter != 3 || h.UpAfter != 0 {
		t.Errorf("health check options: %+v", h)
	}
	if c := cfg.steering.loc.Client(netipMust("10.1.2.3"), -1); c.Owner != "eu1" || c.Region != "eu" {
		t.Errorf("10.1.2.3 placed %+v, want eu1's cluster in eu", c)
	}
	if mustParse(t, "gatewaydns").steering.loc != nil {
		t.Error("a stanza without locality options places clients")
	}
	for _, tc := range []struct{ input, want string }{
		{"gatewaydns {\n healthcheck-interval soon\n}", `Testfile:2 - Error during parsing: healthcheck-interval "soon"`},
		{"gatewaydns {\n endpoint http://e:2379\n healthcheck-timeout 2s\n}", `Testfile:3 - Error during parsing: healthcheck-timeout 2s is longer than healthcheck-interval 500ms`},
		{"gatewaydns {\n locality-cluster eu1\n}", "Testfile:2 - Error during parsing: locality-cluster needs a name"},
		{"gatewaydns {\n locality-cluster eu1 10.0.0.0/8\n locality-cluster us1 10.0.0.0/8\n}", "Testfile:3 - Error during parsing: locality-cluster: network 10.0.0.0/8 is mapped twice"},
		{"gatewaydns {\n steering-metrics\n}", "Testfile:2 - Error during parsing: steering-metrics needs at least one argument"},
		{"gatewaydns {\n steering-metrics *.example.org\n}", `Testfile:2 - Error during parsing: steering-metrics: "*.example.org" is not a name`},
		{"gatewaydns {\n steering-metrics app.example.org\n steering-metrics shop.example.com\n}", "Testfile:3 - Error during parsing: steering-metrics: shop.example.com. is in none of the zones"},
	} {
		c := caddy.NewTestController("dns", tc.input)
		c.ServerBlockKeys = []string{"example.org."}
		if _, err := parse(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want it to contain %q", tc.input, err, tc.want)
		}
	}
	if a, b := mustParse(t, "gatewaydns").feedKey(), mustParse(t, "gatewaydns {\n healthcheck-interval 1s\n}").feedKey(); a == b {
		t.Error("stanzas checking otherwise share a feed (which runs the checks)")
	}
}

// steered is a value of owner for host with a steering object.
func steered(name, owner, host, steering string) record.KV {
	return record.KV{Key: record.Key(record.DefaultPrefix, name, owner, host),
		Value: []byte(fmt.Sprintf(`{"host":%q,"owner":%q,"steering":%s}`, host, owner, steering))}
}

// TestExplainSaysWhyEachOwnerIsInOrOut: dig CH TXT of a steered name tells the rule and each
// owner's weight, tier, health and why it was left out, for the asker's place.
func TestExplainSaysWhyEachOwnerIsInOrOut(t *testing.T) {
	g := loadedStanza(t, "gatewaydns example.org {\n explain\n locality-cluster us1 10.240.0.0/16\n}", []record.KV{
		steered("app.example.org", "eu1", "10.0.1.1", `{"priority":0,"weight":90}`),
		steered("app.example.org", "us1", "10.0.2.1", `{"priority":1,"healthCheck":"tcp://:443"}`),
	})
	req := new(dns.Msg)
	req.SetQuestion("app.example.org.", dns.TypeTXT)
	req.Question[0].Qclass = dns.ClassCHAOS
	for _, tc := range []struct {
		from string
		want []string
	}{
		{"192.0.2.1", []string{"steering=weighted tier=0", "owner=eu1 weight=90 tier=0 health=not checked answered: drawn, weight 90 of 90 in tier 0",
			"owner=us1 weight=none tier=1 health=up check=tcp://:443 left out: priority 1, tier 0 answers"}},
		{"10.240.0.9", []string{"steering=local tier=1", "owner=eu1 weight=90 tier=0 health=not checked left out: the client's own cluster us1 answers",
			"owner=us1 weight=none tier=1 health=up check=tcp://:443 answered: the client's own cluster"}},
	} {
		rec := dnstest.NewRecorder(&test.ResponseWriter{RemoteIP: tc.from})
		if _, err := g.ServeDNS(context.Background(), rec, req); err != nil || rec.Msg == nil {
			t.Fatal(err)
		}
		var got []string
		for _, rr := range rec.Msg.Answer {
			if txt := rr.(*dns.TXT).Txt; !strings.HasPrefix(txt[0], "key=") {
				got = append(got, strings.Join(txt, " "))
			}
		}
		if len(got) > 1 {
			slices.Sort(got[1:]) // the owners, in the order of their keys
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("from %s: explain says\n%s\nwant\n%s", tc.from, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

func netipMust(s string) netip.Addr { return netip.MustParseAddr(s) }

// askFrom asks g for name's A records from the client address from, and returns the addresses
// answered and whether the reply was written packed (as bytes).
func askFrom(t *testing.T, g *GatewayDNS, from, name string) (addrs string, packed bool) {
	t.Helper()
	req := new(dns.Msg)
	req.SetQuestion(name, dns.TypeA)
	m, packed := serve(t, g, &test.ResponseWriter{RemoteIP: from}, req)
	var out []string
	for _, rr := range m.Answer {
		out = append(out, rr.(*dns.A).A.String())
	}
	slices.Sort(out)
	return strings.Join(out, ","), packed
}

// serve is the handler's reply to req from the client of rw, and whether it was written as
// bytes (a packed reply).
func serve(t *testing.T, g *GatewayDNS, rw *test.ResponseWriter, req *dns.Msg) (reply *dns.Msg, packed bool) {
	t.Helper()
	w := &bytesOrMsg{ResponseWriter: rw}
	if _, err := g.ServeDNS(context.Background(), w, req); err != nil {
		t.Fatal(err)
	}
	if w.msg != nil {
		return w.msg, false
	}
	m := new(dns.Msg)
	if err := m.Unpack(w.bytes); err != nil {
		t.Fatal(err)
	}
	return m, true
}

// askBatched is the batched UDP path's reply to req from the client from; ok is false when the
// path hands it to the server.
func askBatched(t *testing.T, g *GatewayDNS, req *dns.Msg, from net.Addr) (reply *dns.Msg, ok bool) {
	t.Helper()
	wire, err := req.Pack()
	if err != nil {
		t.Fatal(err)
	}
	var q packed.Query
	var lower [256]byte
	name, ok := packed.ParseQuery(wire, &q, lower[:0])
	if !ok {
		t.Fatal("a plain question not parsed")
	}
	out, _, ok := g.packer.AppendBatched(nil, &q, string(name), "example.org.", g.stanza.answering().Index, from, false, func() uint32 { return 0 })
	if !ok {
		return nil, false
	}
	m := new(dns.Msg)
	if err := m.Unpack(out); err != nil {
		t.Fatal(err)
	}
	return m, true
}

// TestSteeredNamesArePackedPerChoice: questions for a steered name from two clients,
// alternating, each get their own cluster's address every time, from the third question on
// from a packed reply of their choice (a reply kept for one choice never answers another); a
// name without a policy of one owner is packed as before.
func TestSteeredNamesArePackedPerChoice(t *testing.T) {
	g := loadedStanza(t, "gatewaydns example.org {\n locality-cluster us1 10.240.0.0/16\n locality-cluster eu1 192.0.2.0/24\n}", []record.KV{
		steered("app.example.org", "eu1", "10.0.1.1", `{"weight":50}`),
		steered("app.example.org", "us1", "10.0.2.1", `{"weight":50}`),
		{Key: record.Key(record.DefaultPrefix, "plain.example.org", "eu1", "10.0.3.1"), Value: []byte(`{"host":"10.0.3.1","owner":"eu1"}`)},
	})
	g.packer.SetWrites(prepacked.WritesAll)
	for i := range 4 {
		for _, c := range []struct{ from, name, want string }{
			{"10.240.0.9", "app.example.org.", "10.0.2.1"},
			{"192.0.2.9", "app.example.org.", "10.0.1.1"},
			{"192.0.2.9", "plain.example.org.", "10.0.3.1"},
		} {
			got, packed := askFrom(t, g, c.from, c.name)
			if got != c.want {
				t.Fatalf("question %d for %s from %s: %s, want %s", i, c.name, c.from, got, c.want)
			}
			if i > 1 && !packed { // the first question of a choice is looked up, and kept
				t.Errorf("question %d for %s from %s: not answered from a packed reply", i, c.name, c.from)
			}
		}
	}
	if g.stanza.answering().Packed("app.example.org.", "/skydns/org/example/").Name != nil {
		t.Error("a steered name kept a reply beside its choices' (one answering every client)")
	}
}

// TestPackedChoicesFollowTheWeightsAndAFailover: a name of weights 90/10, asked 10,000 times
// by the handler, answers each owner its share within 3 points though nearly every question is
// answered from a packed reply; when the 90 owner's check fails, every answer is the other's
// from the next question on (the health view drops the choices packed before).
func TestPackedChoicesFollowTheWeightsAndAFailover(t *testing.T) {
	g := loadedStanza(t, "gatewaydns example.org", []record.KV{
		steered("app.example.org", "eu1", "10.0.1.1", `{"weight":90,"healthCheck":"tcp://:443"}`),
		steered("app.example.org", "us1", "10.0.2.1", `{"weight":10}`),
	})
	g.packer.SetWrites(prepacked.WritesAll)
	count, packed := map[string]int{}, 0
	const n = 10000
	for range n {
		got, p := askFrom(t, g, "192.0.2.9", "app.example.org.")
		count[got]++
		if p {
			packed++
		}
	}
	if eu := float64(count["10.0.1.1"]) / n; eu < 0.87 || eu > 0.93 || packed < n-10 {
		t.Fatalf("eu1 answered %.3f (%v), %d of %d packed; want 0.90 +- 0.03, nearly all packed", eu, count, packed, n)
	}
	g.stanza.answering().ApplyHealth([]index.HealthChange{{Target: index.CheckTarget{Host: "10.0.1.1", Check: "tcp://:443"}, Down: true}})
	for range 100 {
		if got, _ := askFrom(t, g, "192.0.2.9", "app.example.org."); got != "10.0.2.1" {
			t.Fatalf("after eu1's check failed: %s", got)
		}
	}
}

// TestAQuestionHandedOverIsPackedAsTheVariantItDrew: the batched UDP path hands a question
// whose drawn owner has no packed reply yet to the server; the server draws the same owner for
// it (the draw is the question's, not a new one), answers it and packs that reply, so that the
// batched path answers the same question next time. Drawn afresh, a 10% owner was packed only
// when both draws happened to pick it, and the path kept handing its questions over.
func TestAQuestionHandedOverIsPackedAsTheVariantItDrew(t *testing.T) {
	g := loadedStanza(t, "gatewaydns example.org", []record.KV{
		steered("app.example.org", "eu1", "10.0.1.1", `{"weight":90}`),
		steered("app.example.org", "us1", "10.0.2.1", `{"weight":10}`),
	})
	g.packer.SetWrites(prepacked.WritesAll)
	from := &net.UDPAddr{IP: net.IPv4(192, 0, 2, 9), Port: 40212} // test.ResponseWriter's port
	batched := func(req *dns.Msg) (string, bool) {
		m, ok := askBatched(t, g, req, from)
		if !ok {
			return "", false
		}
		return m.Answer[0].(*dns.A).A.String(), true
	}
	handedOver := map[string]int{}
	for id := range 2000 {
		req := new(dns.Msg)
		req.SetQuestion("app.example.org.", dns.TypeA)
		req.Id = uint16(id) // #nosec G115 -- below 2000
		if _, ok := batched(req); ok {
			continue
		}
		m, _ := serve(t, g, &test.ResponseWriter{RemoteIP: "192.0.2.9"}, req)
		served := m.Answer[0].(*dns.A).A.String()
		handedOver[served]++
		if id < 2 {
			continue // the name's first questions cache its set, then prepare its choice
		}
		if again, ok := batched(req); !ok || again != served {
			t.Fatalf("question %d handed over, answered %s by the server; then by the batched path: %q, %v", id, served, again, ok)
		}
	}
	// The first two questions prepare the name; then each owner's first draw is handed over once.
	if n := handedOver["10.0.1.1"] + handedOver["10.0.2.1"]; n > 4 || handedOver["10.0.2.1"] == 0 {
		t.Errorf("handed over %v of 2000 questions: want each owner's first draw alone", handedOver)
	}
}

// TestSteeringMetricsCountEachAnswerByOwner: the answers of a name of steering-metrics are
// counted by the owner answered, once per question on every path (the packed reply, the usual
// lookup over TCP, the batched UDP path), in the weights' proportion; a name not listed makes
// no series.
func TestSteeringMetricsCountEachAnswerByOwner(t *testing.T) {
	before := answersCounted(t, "app.example.org.")
	g := loadedStanza(t, "gatewaydns example.org {\n steering-metrics App.example.org\n}", []record.KV{
		steered("app.example.org", "eu1", "10.0.1.1", `{"weight":90}`),
		steered("app.example.org", "us1", "10.0.2.1", `{"weight":10}`),
		steered("other.example.org", "eu1", "10.0.3.1", `{"weight":90}`),
		steered("other.example.org", "us1", "10.0.4.1", `{"weight":10}`),
	})
	g.packer.SetWrites(prepacked.WritesAll)
	answered := map[string]float64{}
	const n = 3000
	for i := range n {
		req := new(dns.Msg)
		req.SetQuestion("app.example.org.", dns.TypeA)
		var got string
		switch i % 3 {
		case 0: // UDP, by the handler: packed once its variant is
			got, _ = askFrom(t, g, "192.0.2.9", "app.example.org.")
		case 1: // TCP: the usual lookup
			m, _ := serve(t, g, &test.ResponseWriter{TCP: true}, req)
			got = m.Answer[0].(*dns.A).A.String()
		default: // the batched UDP path, the handler answering what it hands over
			m, ok := askBatched(t, g, req, &net.UDPAddr{IP: net.IPv4(192, 0, 2, 9), Port: 53000})
			if !ok {
				got, _ = askFrom(t, g, "192.0.2.9", "app.example.org.")
				break
			}
			got = m.Answer[0].(*dns.A).A.String()
		}
		answered[map[string]string{"10.0.1.1": "eu1", "10.0.2.1": "us1"}[got]]++
		askFrom(t, g, "192.0.2.9", "other.example.org.")
	}
	counted := answersCounted(t, "app.example.org.")
	for owner, n := range before {
		counted[owner] -= n
	}
	if n := answersCounted(t, "other.example.org."); len(n) != 0 {
		t.Errorf("series for a name not listed: %v", n)
	}
	if !maps.Equal(counted, answered) {
		t.Fatalf("counted %v, answered %v", counted, answered)
	}
	if eu := answered["eu1"] / n; eu < 0.87 || eu > 0.93 {
		t.Errorf("eu1 answered %.3f, want 0.90 +- 0.03", eu)
	}
}

// answersCounted is coredns_gatewaydns_steering_answers_total of name, by owner, summed over
// the servers.
func answersCounted(t *testing.T, name string) map[string]float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "coredns_gatewaydns_steering_answers_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["name"] == name {
				out[labels["owner"]] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// bytesOrMsg keeps the reply written, as a message or (packed) as bytes.
type bytesOrMsg struct {
	dns.ResponseWriter
	msg   *dns.Msg
	bytes []byte
}

func (w *bytesOrMsg) WriteMsg(m *dns.Msg) error { w.msg = m; return nil }
func (w *bytesOrMsg) Write(b []byte) (int, error) {
	w.bytes = append([]byte(nil), b...)
	return len(b), nil
}

// TestALocalityAnswersNamesOfSeveralOwnersByPlace: with the locality options, a name two
// owners publish without any policy is answered by the client's place, every time, packed per
// choice; without them it answers the union, packed once.
func TestALocalityAnswersNamesOfSeveralOwnersByPlace(t *testing.T) {
	plain := func(owner, host string) record.KV {
		return record.KV{Key: record.Key(record.DefaultPrefix, "app.example.org", owner, host), Value: []byte(fmt.Sprintf(`{"host":%q,"owner":%q}`, host, owner))}
	}
	kvs := []record.KV{plain("eu1", "10.0.1.1"), plain("us1", "10.0.2.1")}
	for _, tc := range []struct{ stanza, us1, other string }{
		{"gatewaydns example.org {\n locality-cluster us1 10.240.0.0/16\n}", "10.0.2.1", "10.0.1.1,10.0.2.1"},
		{"gatewaydns example.org", "10.0.1.1,10.0.2.1", "10.0.1.1,10.0.2.1"},
	} {
		g := loadedStanza(t, tc.stanza, kvs)
		g.packer.SetWrites(prepacked.WritesAll)
		for i := range 3 {
			for _, c := range []struct{ from, want string }{{"10.240.0.9", tc.us1}, {"192.0.2.9", tc.other}} {
				if got, packed := askFrom(t, g, c.from, "app.example.org."); got != c.want || i > 1 && !packed {
					t.Fatalf("%q, question %d from %s: %s (packed %v), want %s packed", tc.stanza, i, c.from, got, packed, c.want)
				}
			}
		}
	}
}

// TestAWriteDropsTheChoicesPacked: once a steered name's choices are packed, a write to its
// records (eu1 moves to another address, us1 drains to weight 0) is answered from the next
// question on, never from a reply packed before it.
func TestAWriteDropsTheChoicesPacked(t *testing.T) {
	g := loadedStanza(t, "gatewaydns example.org", []record.KV{
		steered("app.example.org", "eu1", "10.0.1.1", `{"weight":50}`),
		steered("app.example.org", "us1", "10.0.2.1", `{"weight":50}`),
	})
	g.packer.SetWrites(prepacked.WritesAll)
	seen := map[string]bool{}
	for range 200 {
		got, _ := askFrom(t, g, "192.0.2.9", "app.example.org.")
		seen[got] = true
	}
	if !seen["10.0.1.1"] || !seen["10.0.2.1"] {
		t.Fatalf("answers before the write: %v, want both owners", seen)
	}
	old := steered("app.example.org", "eu1", "10.0.1.1", "")
	g.stanza.answering().Apply([]record.Change{
		{KV: record.KV{Key: old.Key, Revision: 10}, Deleted: true},
		{KV: withRevision(steered("app.example.org", "eu1", "10.0.1.9", `{"weight":50}`), 10)},
		{KV: withRevision(steered("app.example.org", "us1", "10.0.2.1", `{"weight":0}`), 10)},
	})
	for range 200 {
		if got, _ := askFrom(t, g, "192.0.2.9", "app.example.org."); got != "10.0.1.9" {
			t.Fatalf("after the write: %s, want eu1's new address alone (us1 drained)", got)
		}
	}
}

func withRevision(kv record.KV, rev int64) record.KV {
	kv.Revision, kv.Created = rev, rev
	return kv
}
