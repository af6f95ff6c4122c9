package migration

// The setup of the migration tests (migration_test.go): end-to-end migration from a REAL
// external-dns v0.21.0 (--provider=coredns) to the gatewaydns writer (docs/migration.md, step
// 3), one test per way external-dns ran: its default TXT registry, --coredns-strictly-owned
// (from the start, or turned on late), --registry=noop, and still running while the writer
// takes over. Each test: one etcd, one kube-apiserver with a Gateway controller played by
// gatewayfixture, the central server answering the zone, external-dns publishing the names
// first (through a link to etcd that a test can slow down); then the switch
// (switch_test.go), with every name asked over UDP throughout, and an etcd watch that
// sees every put and delete under the cluster's prefix (watch_test.go).
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
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/tcpproxy"
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
	// settled: answered as wanted only once the writer took the name over: the dual-stack
	// name, whose AAAA answer external-dns drops for a moment at each of its sync loops (see
	// startMigration), and a name external-dns's registry text breaks (#4953).
	settled bool
}

func (q migQuestion) String() string { return q.name + " " + dns.TypeToString[q.qtype] }

// migration is one workload cluster (eu1) publishing into the central etcd, and the central
// server.
type migration struct {
	etcd    *testenv.Etcd
	cli     *clientv3.Client
	kube    *testenv.Kube
	k8s     *gatewayfixture.Cluster
	central *corednsproc.Process
	// link is external-dns's connection to etcd, slowed down to stop it inside a sync loop
	// (stopMidSync).
	link *tcpproxy.Proxy
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
	link, err := tcpproxy.Start(strings.TrimPrefix(m.etcd.ClientURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = link.Close() })
	m.link = link
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
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
		m.questions[len(m.questions)-1].settled = true
	}
	// The central server, as corefile.d/central.Corefile has it (written out: the harness
	// gives etcd's URL inline).
	m.central = corednsproc.Start(t, "central.Corefile", fmt.Sprintf(
		"openmcp.cluster {\n    errors\n    health\n    ready\n    prometheus :9153\n    gatewaydns {\n        endpoint %s\n    }\n}\n",
		m.etcd.ClientURL))
	m.central.WaitReady(t, 30*time.Second)
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
// subdomain only, and the flags args.
func (m *migration) externalDNS(t *testing.T, strictlyOwned bool, args ...string) *testenv.ExternalDNS {
	t.Helper()
	return testenv.StartExternalDNS(t, testenv.ExternalDNSOptions{
		Args:          args,
		EtcdURL:       "http://" + m.link.Addr,
		Kubeconfig:    m.kube.KubeconfigFile,
		DomainFilter:  migDomain,
		OwnerID:       migOwner,
		StrictlyOwned: strictlyOwned,
	})
}

// writer starts the gatewaydns writer of eu1 with the extra stanza lines.
func (m *migration) writer(t *testing.T, extra ...string) *corednsproc.Process {
	t.Helper()
	w := e2e.RunWriter(t, "eu1", m.etcd.ClientURL, migOwner, m.kube.KubeconfigFile, migDomain, extra...)
	w.WaitReady(t, 60*time.Second)
	return w
}

// waitPublished waits until the central server answers every question as wanted, and
// external-dns then completes two sync loops: the second one started after every name was
// answered. (external-dns v0.21.0 never settles a dual-stack name, nor, with strict ownership,
// an IPv6 address: it reads every IP back as an A record, and rewrites those at every loop.)
func (m *migration) waitPublished(t *testing.T, x *testenv.ExternalDNS, what string) {
	t.Helper()
	began := time.Now()
	m.waitAnswered(t, 30*time.Second, false)
	answered := time.Since(began)
	st := x.WaitSyncs(t, 2, 15*time.Second)
	t.Logf("%s: every name answered after %s, then %d sync loops, %d with changes",
		what, answered.Round(time.Millisecond), st.Syncs, st.Changes)
}

// waitAnswered waits until the central server answers every question as wanted, the settled
// ones too when all.
func (m *migration) waitAnswered(t *testing.T, timeout time.Duration, all bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for _, q := range m.questions {
		if q.settled && !all {
			continue
		}
		e2e.WaitFor(t, time.Until(deadline), m.central.DNS, q.name, q.qtype, func(r *dns.Msg) bool {
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
			out[e2e.OwnKey(name, migOwner, tg)] = tg
		}
	}
	return out
}

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
func dumpKeys(keys map[string]e2e.KVInfo) string {
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
func (m *migration) logKeys(t *testing.T, what string) map[string]e2e.KVInfo {
	t.Helper()
	keys := e2e.KeysUnder(t, m.cli, migPrefix)
	t.Logf("%s: %d keys under %s:\n%s", what, len(keys), migPrefix, dumpKeys(keys))
	return keys
}

// keyProblems lists what is wrong with keys against the writer's wanted end state: exactly the
// deterministic keys of eu1, each with owner eu1 and its target, no TXT registry record, no
// registry text, no second key for a target.
func (m *migration) keyProblems(keys map[string]e2e.KVInfo) []string {
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
		keys := e2e.KeysUnder(t, m.cli, migPrefix)
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
	keys := e2e.KeysUnder(t, m.cli, migPrefix)
	if problems := m.keyProblems(keys); len(problems) > 0 {
		t.Errorf("after the migration:\n%s\nkeys under %s:\n%s", strings.Join(problems, "\n"), migPrefix, dumpKeys(keys))
	}
}

// hexKey is a key under name's path with a random 8-hex suffix, as external-dns makes them.
func hexKey(name string) string {
	return record.NamePath(record.DefaultPrefix, name) + "/" + fmt.Sprintf("%08x", rand.Int32())
}
