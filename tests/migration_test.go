package tests

// End-to-end migration from a REAL external-dns v0.21.0 (--provider=coredns) to the gatewaydns
// writer (docs/migration.md, steps 3 and 4), one test per way external-dns ran: with its
// default TXT registry, with --coredns-strictly-owned turned on late, and still running while
// the writer takes over. Each test: one etcd, one kube-apiserver with a Gateway controller
// played by gatewayfixture, the central server answering the zone, external-dns publishing
// the names first; then the switch, with every name asked over UDP throughout, and an etcd
// watch that sees every put and delete under the cluster's prefix.
//
// external-dns is built by hack/build-external-dns.sh (make test-binaries); without
// $GATEWAYDNS_TEST_BIN these tests skip (see testenv.ExternalDNSBinary).

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

const (
	migDomain = "eu1.openmcp.cluster"
	migOwner  = "eu1"
	migPrefix = "/skydns/cluster/openmcp/eu1/"
	// migCNAME is the target annotation on the Gateway "lb": a load balancer known by name.
	migCNAME = "lb.example.net"
	// migTXTOwner is the writer's stanza line that lets it take over what external-dns's TXT
	// registry assigns to the owner.
	migTXTOwner = "txt-owner-id " + migOwner
)

// migQuestion is one question the central server must answer the same way throughout a
// migration.
type migQuestion struct {
	name  string   // without the trailing dot
	qtype uint16   // A or AAAA; a CNAME name is asked for A
	want  []string // the answer as answerSet renders it
}

func (q migQuestion) String() string { return q.name + " " + dns.TypeToString[q.qtype] }

// migration is one workload cluster (eu1) publishing into the central etcd, and the central
// server.
type migration struct {
	etcd    *testenv.Etcd
	cli     *clientv3.Client
	kube    *testenv.Kube
	k8s     *gatewayfixture.Cluster
	central *coreDNSProcess
	// questions are asked throughout; targets are the targets of each name, the keys the
	// writer must end with.
	questions []migQuestion
	targets   map[string][]string
	// dualStack: a name with an IPv4 and an IPv6 address, which external-dns v0.21.0 never
	// settles (see startMigration).
	dualStack bool
	start     time.Time
}

// startMigration starts etcd, a kube-apiserver with Gateways and HTTPRoutes giving names with
// an IPv4 address, an IPv6 address, a CNAME (the target annotation on the Gateway) and, with
// dualStack, a name with both an IPv4 and an IPv6 address, and the central server. Nothing
// publishes yet.
//
// external-dns v0.21.0's coredns provider reads every key with an IP address as an A record
// and merges the keys of a name into one endpoint: a dual-stack name is read back as one A
// record with both addresses, which never matches the A and AAAA it wants. Every sync loop it
// then deletes the IPv6 key and puts a new one with a new random suffix (two requests: the
// AAAA answer is missing in between), and every other loop it adds one more a-<name> TXT
// registry record. A test with dualStack cannot wait for external-dns to settle, nor ask the
// dual-stack name while external-dns runs.
func startMigration(t *testing.T, dualStack bool) *migration {
	t.Helper()
	testenv.ExternalDNSBinary(t) // skips now rather than after starting everything
	m := &migration{start: time.Now(), targets: map[string][]string{}, dualStack: dualStack}
	m.etcd = testenv.StartEtcd(t)
	m.cli = m.etcd.Client(t)
	m.kube = testenv.StartKubeAPIServer(t)
	m.k8s = gatewayfixture.New(t, m.kube.Config)
	m.k8s.Namespace("infra")
	m.k8s.Namespace("shop")
	gws := []struct {
		name  string
		addrs []string
	}{
		{"v4", []string{"203.0.113.10"}},
		{"v6", []string{"2001:db8::10"}},
		{"lb", []string{"203.0.113.30"}}, // overridden by the target annotation
	}
	if dualStack {
		gws = append(gws, struct {
			name  string
			addrs []string
		}{"dual", []string{"203.0.113.20", "2001:db8::20"}})
	}
	for _, g := range gws {
		m.k8s.Gateway("infra", g.name, gatewayv1.HTTPProtocolType, 80, "", g.addrs...)
	}
	// The prefix external-dns v0.21.0 reads by default (external-dns.alpha.kubernetes.io/);
	// gatewaydns reads it too.
	ctx := context.Background()
	lb, err := m.k8s.GW.GatewayV1().Gateways("infra").Get(ctx, "lb", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lb.Annotations = map[string]string{"external-dns.alpha.kubernetes.io/target": migCNAME}
	if _, err := m.k8s.GW.GatewayV1().Gateways("infra").Update(ctx, lb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	routes := []struct {
		route, gw, label string
	}{
		{"app", "v4", "app"},
		{"www", "v4", "www"},
		{"legacy", "v4", "legacy"},
		{"v6", "v6", "v6"},
		{"cname", "lb", "cname"},
	}
	if dualStack {
		routes = append(routes, struct{ route, gw, label string }{"dual", "dual", "dual"})
	}
	for _, r := range routes {
		m.k8s.HTTPRoute("shop", r.route, "infra", r.gw, r.label+"."+migDomain)
	}
	a := m.question
	a("app", dns.TypeA, "A 203.0.113.10")
	a("www", dns.TypeA, "A 203.0.113.10")
	a("legacy", dns.TypeA, "A 203.0.113.10")
	a("v6", dns.TypeAAAA, "AAAA 2001:db8::10")
	a("cname", dns.TypeA, "CNAME "+migCNAME+".")
	if dualStack {
		a("dual", dns.TypeA, "A 203.0.113.20")
		a("dual", dns.TypeAAAA, "AAAA 2001:db8::20")
	}
	// The central server, without the `log` plugin of corefile.d/central.Corefile: the poller
	// asks thousands of questions.
	m.central = startCorefile(t, "central.Corefile", fmt.Sprintf(
		"openmcp.cluster {\n    errors\n    health\n    ready\n    prometheus :9153\n    gatewaydns {\n        endpoint %s\n    }\n}\n",
		m.etcd.ClientURL))
	m.central.waitReady(t, 30*time.Second)
	t.Logf("etcd, kube-apiserver with %d Gateways and %d HTTPRoutes, central server: up after %s",
		len(gws), len(routes), time.Since(m.start).Round(time.Millisecond))
	return m
}

// question adds label.eu1.openmcp.cluster qtype to the questions asked throughout, and the
// targets of its wanted answer to the name's targets.
func (m *migration) question(label string, qtype uint16, want ...string) {
	q := migQuestion{name: label + "." + migDomain, qtype: qtype, want: want}
	m.questions = append(m.questions, q)
	for _, w := range want {
		_, target, _ := strings.Cut(w, " ")
		m.targets[q.name] = append(m.targets[q.name], strings.TrimSuffix(target, "."))
	}
}

// externalDNS starts external-dns as the cluster ran it: gateway-httproute, owner eu1, its
// subdomain only.
func (m *migration) externalDNS(t *testing.T, strictlyOwned bool) *testenv.ExternalDNS {
	t.Helper()
	return testenv.StartExternalDNS(t, testenv.ExternalDNSOptions{
		EtcdURL:       m.etcd.ClientURL,
		Kubeconfig:    m.kube.KubeconfigFile,
		DomainFilter:  migDomain,
		OwnerID:       migOwner,
		StrictlyOwned: strictlyOwned,
	})
}

// writer starts the gatewaydns writer of eu1 with the extra stanza lines.
func (m *migration) writer(t *testing.T, extra ...string) *coreDNSProcess {
	t.Helper()
	w := runWriter(t, "eu1", m.etcd.ClientURL, migOwner, m.kube.KubeconfigFile, migDomain, extra...)
	w.waitReady(t, 60*time.Second)
	return w
}

// waitPublished waits until the central server answers every question as wanted and
// external-dns then completes a sync loop that changes nothing: everything it writes is in
// etcd. With a dual-stack name, which external-dns never settles, it waits for two loops
// instead: the second one started after every name was answered.
func (m *migration) waitPublished(t *testing.T, x *testenv.ExternalDNS, what string) {
	t.Helper()
	began := time.Now()
	m.waitAnswered(t, 30*time.Second)
	answered := time.Since(began)
	if m.dualStack {
		st := x.WaitSyncs(t, 2, 15*time.Second)
		t.Logf("%s: every name answered after %s, then %d sync loops, %d with changes",
			what, answered.Round(time.Millisecond), st.Syncs, st.Changes)
		return
	}
	st := x.WaitSteady(t, 15*time.Second)
	t.Logf("%s: every name answered after %s, a sync loop without changes after %s (%d loops, %d with changes)",
		what, answered.Round(time.Millisecond), time.Since(began).Round(time.Millisecond), st.Syncs, st.Changes)
}

// waitAnswered waits until the central server answers every question as wanted.
func (m *migration) waitAnswered(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for _, q := range m.questions {
		waitFor(t, time.Until(deadline), m.central.DNS, q.name, q.qtype, func(r *dns.Msg) bool {
			return r.Rcode == dns.RcodeSuccess && slices.Equal(answerSet(r), q.want)
		})
	}
}

// wantKeys are the keys the writer of eu1 ends with: one deterministic key per name and
// target.
func (m *migration) wantKeys() map[string]string {
	out := map[string]string{}
	for name, targets := range m.targets {
		for _, tg := range targets {
			out[ownKey(name, migOwner, tg)] = tg
		}
	}
	return out
}

// answerSet renders the answer section as sorted, deduplicated "A 1.2.3.4", "AAAA ...",
// "CNAME target." strings; dup tells whether a record came twice.
func answerSet(r *dns.Msg) []string {
	s, _ := answerSetDup(r)
	return s
}

func answerSetDup(r *dns.Msg) (set []string, dup bool) {
	seen := map[string]bool{}
	for _, rr := range r.Answer {
		var s string
		switch v := rr.(type) {
		case *dns.A:
			s = "A " + v.A.String()
		case *dns.AAAA:
			s = "AAAA " + v.AAAA.String()
		case *dns.CNAME:
			s = "CNAME " + v.Target
		default:
			s = dns.TypeToString[rr.Header().Rrtype] + " " + strings.TrimPrefix(rr.String(), rr.Header().String())
		}
		if seen[s] {
			dup = true
			continue
		}
		seen[s] = true
		set = append(set, s)
	}
	sort.Strings(set)
	return set, dup
}

// questionPoller asks every question in turn, continuously, over UDP, and keeps every reply
// that is not the wanted answer.
type questionPoller struct {
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	rounds int
	asked  map[string]int
	dups   map[string]int
	bad    []string
}

func pollQuestions(addr string, qs []migQuestion) *questionPoller {
	p := &questionPoller{stop: make(chan struct{}), done: make(chan struct{}), asked: map[string]int{}, dups: map[string]int{}}
	go func() {
		defer close(p.done)
		for {
			for _, q := range qs {
				r, err := exchange("udp", addr, q.name, q.qtype)
				now := time.Now().Format("15:04:05.000")
				p.mu.Lock()
				p.asked[q.String()]++
				switch {
				case err != nil:
					p.bad = append(p.bad, fmt.Sprintf("%s %s: no reply: %v", now, q, err))
				case r.Rcode != dns.RcodeSuccess:
					p.bad = append(p.bad, fmt.Sprintf("%s %s: %s", now, q, dns.RcodeToString[r.Rcode]))
				default:
					got, dup := answerSetDup(r)
					if !slices.Equal(got, q.want) {
						p.bad = append(p.bad, fmt.Sprintf("%s %s: NOERROR with %v, want %v", now, q, got, q.want))
					} else if dup {
						p.dups[q.String()]++
					}
				}
				p.mu.Unlock()
			}
			p.mu.Lock()
			p.rounds++
			p.mu.Unlock()
			select {
			case <-p.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return p
}

// waitRounds waits until the poller has asked every question n more times.
func (p *questionPoller) waitRounds(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	p.mu.Lock()
	target := p.rounds + n
	p.mu.Unlock()
	for deadline := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		p.mu.Lock()
		r := p.rounds
		p.mu.Unlock()
		if r >= target {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the DNS poller did only %d of %d rounds within %s", r-(target-n), n, timeout)
		}
	}
}

// finish stops the poller and fails the test for every reply that was not the wanted answer.
func (p *questionPoller) finish(t *testing.T, what string) {
	t.Helper()
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	total := 0
	for _, n := range p.asked {
		total += n
	}
	if p.rounds < 20 {
		t.Errorf("%s: only %d rounds of questions, too few to say anything", what, p.rounds)
	}
	if len(p.bad) > 0 {
		shown := p.bad
		if len(shown) > 20 {
			shown = shown[:20]
		}
		t.Errorf("%s: %d of %d replies were not the wanted answer:\n%s", what, len(p.bad), total, strings.Join(shown, "\n"))
	}
	if len(p.dups) > 0 {
		t.Logf("%s: replies holding a record twice (two keys for one target): %v", what, p.dups)
	}
	t.Logf("%s: %d rounds, %d questions (%v), %d not answered as wanted", what, p.rounds, total, p.asked, len(p.bad))
}

// keyEvent is one put or delete seen by a keyWatch.
type keyEvent struct {
	put   bool
	key   string
	rev   int64  // the revision of the put or delete (the transaction's)
	value string // the value put, or the value deleted
}

func (e keyEvent) String() string {
	op := "DELETE"
	if e.put {
		op = "PUT"
	}
	return fmt.Sprintf("rev %d %s %s %s", e.rev, op, e.key, e.value)
}

// keyWatch records every change under a prefix from the revision it started at.
type keyWatch struct {
	cli    *clientv3.Client
	from   int64
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	events []keyEvent
	seen   int64 // the highest revision the watch is known to have delivered up to
	err    error
}

// watchKeys starts watching prefix from the next revision.
func watchKeys(t *testing.T, cli *clientv3.Client, prefix string) *keyWatch {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("get %s: %v", prefix, err)
	}
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	w := &keyWatch{cli: cli, from: resp.Header.Revision + 1, cancel: cancel, done: make(chan struct{}), seen: resp.Header.Revision}
	ch := cli.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(w.from), clientv3.WithPrevKV())
	go func() {
		defer close(w.done)
		for resp := range ch {
			w.mu.Lock()
			if err := resp.Err(); err != nil && w.err == nil {
				w.err = err
			}
			for _, ev := range resp.Events {
				e := keyEvent{put: ev.Type == clientv3.EventTypePut, key: string(ev.Kv.Key), rev: ev.Kv.ModRevision}
				if e.put {
					e.value = string(ev.Kv.Value)
				} else if ev.PrevKv != nil {
					e.value = string(ev.PrevKv.Value)
				}
				w.events = append(w.events, e)
			}
			w.seen = max(w.seen, resp.Header.Revision)
			w.mu.Unlock()
		}
	}()
	t.Cleanup(w.close)
	return w
}

func (w *keyWatch) close() {
	w.cancel()
	<-w.done
}

// catchUp waits until the watch has delivered every change up to etcd's current revision, and
// returns the events so far.
func (w *keyWatch) catchUp(t *testing.T) []keyEvent {
	t.Helper()
	resp, err := w.cli.Get(context.Background(), "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	now := resp.Header.Revision
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		w.mu.Lock()
		seen, werr := w.seen, w.err
		events := slices.Clone(w.events)
		w.mu.Unlock()
		if werr != nil {
			t.Fatalf("watching %s: %v", migPrefix, werr)
		}
		if seen >= now {
			return events
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watch delivered up to revision %d, not %d, within 10s", seen, now)
		}
		// A progress notification carries the revision the watch is synced to.
		_ = w.cli.RequestProgress(clientv3.WithRequireLeader(context.Background()))
	}
}

// registryTypePrefixes start the first label of the name of an external-dns TXT registry
// record (new format, v0.12 on): "a-", "aaaa-", "cname-"... before the record's own first label.
var registryTypePrefixes = []string{"a-", "aaaa-", "cname-", "txt-", "ns-", "mx-", "ptr-", "srv-", "naptr-"}

// recordName is the DNS name a key under migPrefix is a record of, and for a TXT registry
// record the name of the records it is about (the type prefix of its first label dropped).
func recordName(key string) (name string, registry bool) {
	name, ok := record.RecordName(record.DefaultPrefix, key)
	if !ok {
		return key, false
	}
	first, rest, _ := strings.Cut(name, ".")
	for _, p := range registryTypePrefixes {
		if strings.HasPrefix(first, p) {
			return strings.TrimPrefix(first, p) + "." + rest, true
		}
	}
	return name, false
}

// etcdValue is the part of a SkyDNS value the assertions look at.
type etcdValue struct {
	Host  string `json:"host"`
	Text  string `json:"text"`
	Owner string `json:"owner"`
}

func parseEtcdValue(v string) etcdValue {
	var e etcdValue
	_ = json.Unmarshal([]byte(v), &e)
	return e
}

// dumpKeys renders keys sorted, one a line, for a failure message or a log.
func dumpKeys(keys map[string]kvInfo) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		fmt.Fprintf(&b, "  %s = %s (mod rev %d)\n", k, keys[k].Value, keys[k].ModRev)
	}
	if b.Len() == 0 {
		return "  (none)\n"
	}
	return b.String()
}

// logKeys logs every key under the cluster's prefix.
func (m *migration) logKeys(t *testing.T, what string) map[string]kvInfo {
	t.Helper()
	keys := keysUnder(t, m.cli, migPrefix)
	t.Logf("%s: %d keys under %s:\n%s", what, len(keys), migPrefix, dumpKeys(keys))
	return keys
}

// keyProblems lists what is wrong with keys against the writer's wanted end state: exactly the
// deterministic keys of eu1, each with owner eu1 and its target, no TXT registry record, no
// registry text, no second key for a target.
func (m *migration) keyProblems(keys map[string]kvInfo) []string {
	want := m.wantKeys()
	var problems []string
	perTarget := map[string][]string{}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		v := parseEtcdValue(keys[k].Value)
		name, registry := recordName(k)
		perTarget[name+" -> "+v.Host] = append(perTarget[name+" -> "+v.Host], k)
		n := len(problems)
		switch {
		case registry:
			problems = append(problems, fmt.Sprintf("TXT registry record left: %s = %s", k, keys[k].Value))
		case strings.Contains(v.Text, "heritage=external-dns"):
			problems = append(problems, fmt.Sprintf("registry text left in a record: %s = %s", k, keys[k].Value))
		case v.Owner == "":
			problems = append(problems, fmt.Sprintf("key without owner: %s = %s", k, keys[k].Value))
		case v.Owner != migOwner:
			problems = append(problems, fmt.Sprintf("key of owner %q: %s = %s", v.Owner, k, keys[k].Value))
		}
		if tg, ok := want[k]; !ok {
			if len(problems) == n { // not said yet
				problems = append(problems, fmt.Sprintf("not a key of the writer: %s = %s", k, keys[k].Value))
			}
		} else if v.Host != tg || v.Text != "" {
			problems = append(problems, fmt.Sprintf("%s = %s, want host %q and no text", k, keys[k].Value, tg))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if _, ok := keys[k]; !ok {
			problems = append(problems, fmt.Sprintf("missing: %s (%s)", k, want[k]))
		}
	}
	for _, nt := range slices.Sorted(maps.Keys(perTarget)) {
		if ks := perTarget[nt]; len(ks) > 1 && !strings.HasSuffix(nt, " -> ") {
			problems = append(problems, fmt.Sprintf("%d keys for %s: %v", len(ks), nt, ks))
		}
	}
	return problems
}

// waitAdopted waits until etcd holds exactly the writer's wanted keys under the prefix.
func (m *migration) waitAdopted(t *testing.T, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		keys := keysUnder(t, m.cli, migPrefix)
		problems := m.keyProblems(keys)
		if len(problems) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the writer did not end with exactly its own keys within %s:\n%s\nkeys under %s:\n%s",
				timeout, strings.Join(problems, "\n"), migPrefix, dumpKeys(keys))
		}
	}
}

// checkFinalKeys fails the test unless etcd holds exactly the writer's wanted keys.
func (m *migration) checkFinalKeys(t *testing.T) {
	t.Helper()
	keys := keysUnder(t, m.cli, migPrefix)
	if problems := m.keyProblems(keys); len(problems) > 0 {
		t.Errorf("after the migration:\n%s\nkeys under %s:\n%s", strings.Join(problems, "\n"), migPrefix, dumpKeys(keys))
	}
}

// checkWrites fails the test when a key of the writer was put more than once in events, or
// when a key the writer replaced was deleted in another transaction than a put of the writer
// for the same name (the put and the delete of one replacement share a revision).
func (m *migration) checkWrites(t *testing.T, events []keyEvent) {
	t.Helper()
	want := m.wantKeys()
	puts := map[string]int{}
	putRevs := map[string][]int64{} // name -> revisions of the writer's puts for it
	for _, e := range events {
		if _, ours := want[e.key]; ours && e.put {
			puts[e.key]++
			name, _ := recordName(e.key)
			putRevs[name] = append(putRevs[name], e.rev)
		}
	}
	var problems []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if puts[k] != 1 {
			problems = append(problems, fmt.Sprintf("%s put %d times, want once", k, puts[k]))
		}
	}
	for _, e := range events {
		if _, ours := want[e.key]; ours || e.put {
			continue
		}
		name, _ := recordName(e.key)
		if !slices.Contains(putRevs[name], e.rev) {
			problems = append(problems, fmt.Sprintf("%s deleted at revision %d, in no transaction that put a key of the writer for %s (those: %v)",
				e.key, e.rev, name, putRevs[name]))
		}
	}
	var b strings.Builder
	for _, e := range events {
		b.WriteString("  " + e.String() + "\n")
	}
	if len(problems) > 0 {
		t.Errorf("writes since the switch:\n%s\nevery change under %s since the switch:\n%s", strings.Join(problems, "\n"), migPrefix, b.String())
		return
	}
	revs := map[int64]bool{}
	for _, e := range events {
		revs[e.rev] = true
	}
	t.Logf("%d changes under %s since the switch, in %d transactions, each key of the writer put once:\n%s", len(events), migPrefix, len(revs), b.String())
}

// hexKey is a key under name's path with a random 8-hex suffix, as external-dns makes them.
func hexKey(name string) string {
	return record.NamePath(record.DefaultPrefix, name) + "/" + fmt.Sprintf("%08x", rand.Int32())
}

// switchToWriter is the switch of the tests that stop external-dns first (external-dns is
// stopped already): with every question asked throughout, the writer of eu1 starts with the
// extra lines and must end with exactly its own keys, each put once, each replaced key deleted
// in the transaction that put its replacement, no answer ever missing.
func (m *migration) switchToWriter(t *testing.T, extra ...string) {
	t.Helper()
	// external-dns stopped between two sync loops, so its last one left everything answered.
	m.waitAnswered(t, 5*time.Second)
	poll := pollQuestions(m.central.DNS, m.questions)
	poll.waitRounds(t, 5, 10*time.Second)
	watch := watchKeys(t, m.cli, migPrefix)
	began := time.Now()
	m.writer(t, extra...)
	m.waitAdopted(t, 30*time.Second)
	t.Logf("the writer ended with exactly its own keys %s after it started", time.Since(began).Round(time.Millisecond))
	poll.waitRounds(t, 10, 10*time.Second)
	poll.finish(t, "every name during the switch")
	m.checkWrites(t, watch.catchUp(t))
	m.checkFinalKeys(t)
}

// oldFormatValue is a record of external-dns's old registry format, the registry text in the
// record's own key: its coredns provider writes the text into the record when the TXT record
// has the record's name (updateTXTRecords; the registry format before v0.12; external-dns
// #4953, coredns #6110).
func oldFormatValue(target, route string) string {
	return `{"host":"` + target + `","text":"\"heritage=external-dns,external-dns/owner=eu1,external-dns/resource=httproute/shop/` +
		route + `\"","ttl":300,"targetstrip":1}`
}

// TestMigrationFromExternalDNSWithTXTRegistry: external-dns with its default TXT registry and
// no strict ownership published the names (its record keys carry no owner; its ownership is in
// TXT records at a-<name>, aaaa-<name>, cname-<name>); two keys in its old format are there,
// the registry text in the record's own key, one of them the only registry record of its name.
// Once external-dns is stopped, the writer of eu1, started with `txt-owner-id eu1`, replaces
// every one of those keys by its own and deletes the registry records, each in the transaction
// that puts the replacement, while every name keeps being answered; each of its keys is
// written once.
func TestMigrationFromExternalDNSWithTXTRegistry(t *testing.T) {
	m := startMigration(t, true)
	// An old-format key found by external-dns v0.21.0 when it starts: it keeps it (and writes
	// a new-format a-legacy record beside it).
	legacyKey := hexKey("legacy." + migDomain)
	putEtcd(t, m.cli, legacyKey, oldFormatValue("203.0.113.10", "legacy"))

	x := m.externalDNS(t, false)
	m.waitPublished(t, x, "external-dns (TXT registry)")
	x.StopAfterSync(t, 10*time.Second)
	before := m.logKeys(t, "external-dns published, then stopped")
	if _, ok := before[legacyKey]; !ok {
		t.Errorf("external-dns removed the old-format key %s", legacyKey)
	}
	// A name published by an older external-dns only: its old-format key is the only registry
	// record saying eu1 holds it.
	m.k8s.HTTPRoute("shop", "old", "infra", "v4", "old."+migDomain)
	putEtcd(t, m.cli, hexKey("old."+migDomain), oldFormatValue("203.0.113.10", "old"))
	m.question("old", dns.TypeA, "A 203.0.113.10")
	m.switchToWriter(t, migTXTOwner)
	t.Logf("total %s", time.Since(m.start).Round(time.Millisecond))
}

// TestMigrationFromExternalDNSStrictlyOwned: external-dns published without
// --coredns-strictly-owned, then ran with it (what docs/migration.md step 0 suggests): it reads
// only keys with its owner, so it wrote a second, owned key beside every ownerless one, and new
// TXT registry records. Once it is stopped, the writer of eu1, started with `txt-owner-id eu1`,
// ends with only its own keys: the owned ones, the ownerless ones the registry assigns to eu1
// and the registry records are gone, every name answered throughout.
func TestMigrationFromExternalDNSStrictlyOwned(t *testing.T) {
	m := startMigration(t, true)
	x := m.externalDNS(t, false)
	m.waitPublished(t, x, "external-dns (TXT registry)")
	x.StopAfterSync(t, 10*time.Second)
	plain := m.logKeys(t, "external-dns without --coredns-strictly-owned published")

	xs := m.externalDNS(t, true)
	m.waitPublished(t, xs, "external-dns --coredns-strictly-owned")
	xs.StopAfterSync(t, 10*time.Second)
	strict := m.logKeys(t, "then external-dns with --coredns-strictly-owned")
	// The trap: the ownerless keys stay, beside new owned ones.
	kept, owned := 0, 0
	for k, v := range strict {
		if p, old := plain[k]; old && v.ModRev == p.ModRev {
			kept++
		} else if parseEtcdValue(v.Value).Owner == migOwner {
			owned++
		}
	}
	t.Logf("--coredns-strictly-owned left %d of the %d keys as they were and wrote %d keys with owner %s", kept, len(plain), owned, migOwner)
	if owned == 0 {
		t.Errorf("external-dns --coredns-strictly-owned wrote no key with owner %s", migOwner)
	}
	m.switchToWriter(t, migTXTOwner)
	t.Logf("total %s", time.Since(m.start).Round(time.Millisecond))
}

// TestMigrationWhileExternalDNSStillRuns: the writer of eu1 (`txt-owner-id eu1`) starts while
// external-dns (TXT registry) still runs, as in docs/migration.md step 3. The writer adopts
// every name; over the next external-dns sync loops nothing under the prefix is written by
// either (no ping-pong); external-dns is then stopped (step 4). Every name is answered
// throughout, and the writer ends with exactly its own keys, each written once. (No
// dual-stack name: external-dns alone drops its AAAA answer now and then, see startMigration.)
func TestMigrationWhileExternalDNSStillRuns(t *testing.T) {
	m := startMigration(t, false)
	x := m.externalDNS(t, false)
	m.waitPublished(t, x, "external-dns (TXT registry)")
	m.logKeys(t, "external-dns published")

	poll := pollQuestions(m.central.DNS, m.questions)
	poll.waitRounds(t, 5, 10*time.Second)
	watch := watchKeys(t, m.cli, migPrefix)
	began := time.Now()
	m.writer(t, migTXTOwner)
	m.waitAdopted(t, 30*time.Second)
	t.Logf("the writer ended with exactly its own keys %s after it started, external-dns running", time.Since(began).Round(time.Millisecond))

	// Both run: external-dns's next loops must leave the writer's keys alone, and the writer
	// must not write them again.
	settled := len(watch.catchUp(t))
	st := x.WaitSyncs(t, 3, 20*time.Second)
	during := watch.catchUp(t)[settled:]
	if len(during) > 0 {
		var b strings.Builder
		for _, e := range during {
			b.WriteString("  " + e.String() + "\n")
		}
		t.Errorf("%d changes under %s during %d external-dns sync loops after the adoption (ping-pong):\n%s", len(during), migPrefix, st.Syncs, b.String())
	}
	t.Logf("both running: %d external-dns sync loops (%d with changes), %d changes under %s", st.Syncs, st.Changes, len(during), migPrefix)
	if st.Changes > 0 {
		t.Logf("external-dns log (last lines):\n%s", testenv.LogTail(x.LogFile, 40))
	}

	x.Stop()
	poll.waitRounds(t, 10, 10*time.Second)
	poll.finish(t, "every name during the switch")
	m.checkWrites(t, watch.catchUp(t))
	m.checkFinalKeys(t)
	t.Logf("total %s", time.Since(m.start).Round(time.Millisecond))
}
