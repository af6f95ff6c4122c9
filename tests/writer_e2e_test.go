package tests

// End-to-end acceptance of the multi-cluster writer (issue 4), through the BUILT binary: real
// kube-apiservers (one per cluster), one real etcd, writers and a central server as separate
// coredns processes, and real DNS questions. The store-level tests
// (plugin/gatewaydns/store/writer_test.go) cover the writer in isolation; these prove the same
// promises hold once the plugin, its Corefile options, Kubernetes and etcd are put together.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/mirror"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// writerCorefile is a workload cluster's publish-only stanza for the zone openmcp.cluster, with
// the extra option lines given (policy, conflict, lease, credentials, namespaces...).
func writerCorefile(etcdURL, owner, kubeconfig, domainFilter string, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "openmcp.cluster {\n    errors\n    ready\n    prometheus :9153\n    gatewaydns {\n")
	fmt.Fprintf(&b, "        endpoint %s\n        owner %s\n        kubeconfig %s\n        domain-filter %s\n        publish-only\n",
		etcdURL, owner, kubeconfig, domainFilter)
	for _, l := range extra {
		fmt.Fprintf(&b, "        %s\n", l)
	}
	b.WriteString("    }\n}\n")
	return b.String()
}

// runWriter starts a publish-only writer and waits until it is ready.
func runWriter(t *testing.T, name, etcdURL, owner, kubeconfig, domainFilter string, extra ...string) *coreDNSProcess {
	t.Helper()
	return startCorefile(t, name+".Corefile", writerCorefile(etcdURL, owner, kubeconfig, domainFilter, extra...))
}

// runCentral starts the central server (corefile.d/central.Corefile) on etcdURL and waits
// until it is ready.
func runCentral(t *testing.T, etcdURL string) *coreDNSProcess {
	t.Helper()
	c := runCorefile(t, "central.Corefile", "GATEWAYDNS_ETCD_ENDPOINTS="+etcdURL)
	c.waitReady(t, 30*time.Second)
	return c
}

// kill9 ends the process abruptly, as a crashed pod would (no resign, no lease revoke).
func (p *coreDNSProcess) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill -9: %v", err)
	}
	<-p.done // Wait returned: ProcessState is set, so the cleanup's stop does nothing
}

// alive reports whether the process still runs.
func (p *coreDNSProcess) alive() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return false
	default:
		return true
	}
}

// metric is the value of one series, named by the labels the test cares about (see
// seriesValue), e.g. `coredns_gatewaydns_writer_leader{owner="eu1"}`, from the process's
// /metrics. ok is false when the series is not exported (v is 0) or the labels name several
// (v is NaN: no condition holds).
func (p *coreDNSProcess) metric(series string) (v float64, ok bool) {
	body, code := httpGet("http://" + p.Metrics + "/metrics")
	if code != 200 {
		return 0, false
	}
	switch m := matching(body, series); len(m) {
	case 0:
		return 0, false
	case 1:
		return m[0].value, true
	default:
		return math.NaN(), false
	}
}

// waitMetric polls until cond holds for the series' value (0 when absent).
func (p *coreDNSProcess) waitMetric(t *testing.T, timeout time.Duration, series string, cond func(float64) bool) float64 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, _ := p.metric(series)
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v: condition not met within %s", series, v, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// keys returns every key under prefix with its mod revision, create revision and lease.
type kvInfo struct {
	Value     string
	ModRev    int64
	CreateRev int64
	Lease     int64
}

// etcdCallTimeout bounds each etcd request of a test's own: a hung etcd fails the test
// instead of hanging it.
const etcdCallTimeout = 10 * time.Second

func keysUnder(t *testing.T, cli *clientv3.Client, prefix string) map[string]kvInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), etcdCallTimeout)
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("get %s: %v", prefix, err)
	}
	out := make(map[string]kvInfo, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kvInfo{Value: string(kv.Value), ModRev: kv.ModRevision, CreateRev: kv.CreateRevision, Lease: kv.Lease}
	}
	return out
}

func putEtcd(t *testing.T, cli *clientv3.Client, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), etcdCallTimeout)
	defer cancel()
	if _, err := cli.Put(ctx, key, value); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// ownKey is the deterministic key the writer of owner writes for name -> target.
func ownKey(name, owner, target string) string {
	return record.Key(record.DefaultPrefix, name, owner, target)
}

// waitEvent polls until a Warning Event with reason is on the object, and returns its message.
func waitEvent(t *testing.T, k8s *gatewayfixture.Cluster, namespace, kind, name, reason string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if evs := k8s.WarningEvents(namespace, kind, name, reason); len(evs) > 0 {
			return evs[0].Message
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Warning Event %q on %s %s/%s within %s", reason, kind, namespace, name, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dnsPoller asks one question continuously and keeps every reply that does not hold.
type dnsPoller struct {
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	asked   int
	bad     []string // replies that failed the condition, or no reply at all
	dupReps int      // replies that answered the right address more than once
}

// pollDNS starts asking addr for name A every few milliseconds; every reply must be NOERROR
// with exactly the addresses want (a repeated address is tolerated and counted).
func pollDNS(addr, name string, want ...string) *dnsPoller {
	return pollDNSFor(addr, name, func(seen map[string]bool) bool {
		ok := len(seen) == len(want)
		for _, w := range want {
			ok = ok && seen[w]
		}
		return ok
	})
}

// pollDNSFor is pollDNS for replies whose set of addresses accept takes.
func pollDNSFor(addr, name string, accept func(seen map[string]bool) bool) *dnsPoller {
	p := &dnsPoller{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			r, err := exchange("udp", addr, name, dns.TypeA)
			p.mu.Lock()
			p.asked++
			switch {
			case err != nil:
				p.bad = append(p.bad, fmt.Sprintf("%s: no reply: %v", time.Now().Format("15:04:05.000"), err))
			case r.Rcode != dns.RcodeSuccess:
				p.bad = append(p.bad, fmt.Sprintf("%s: %s", time.Now().Format("15:04:05.000"), dns.RcodeToString[r.Rcode]))
			default:
				got := addresses(r)
				seen := map[string]bool{}
				for _, a := range got {
					seen[a] = true
				}
				if !accept(seen) {
					p.bad = append(p.bad, fmt.Sprintf("%s: NOERROR with %v", time.Now().Format("15:04:05.000"), got))
				} else if len(got) > len(seen) {
					p.dupReps++
				}
			}
			p.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return p
}

// finish stops the poller and fails the test for any reply that did not hold. A poller that
// asked fewer than 20 questions asks on, for at most 5 s, until it has: an event over in a few
// hundred milliseconds (ten reloads) is seen by the questions asked during it, and those after
// it show the server answering still; a poller that cannot ask 20 in that time says nothing.
func (p *dnsPoller) finish(t *testing.T, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		p.mu.Lock()
		asked := p.asked
		p.mu.Unlock()
		if asked >= 20 {
			break
		}
	}
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.asked < 20 {
		t.Errorf("%s: only %d questions asked, too few to say anything", what, p.asked)
	}
	if len(p.bad) > 0 {
		shown := p.bad
		if len(shown) > 10 {
			shown = shown[:10]
		}
		t.Errorf("%s: %d of %d replies did not answer as expected (a flap):\n%s", what, len(p.bad), p.asked, strings.Join(shown, "\n"))
	}
	if p.dupReps > 0 {
		t.Logf("%s: %d of %d replies held the address twice", what, p.dupReps, p.asked)
	}
	t.Logf("%s: %d questions, %d unanswered or wrong", what, p.asked, len(p.bad))
}

// TestWriterTwoOwnersOneName: two clusters (two kube-apiservers, two writer binaries with
// different owners) publish the same name into one etcd. In shared mode the central server
// answers the union of both clusters' addresses; in exclusive mode the oldest claim keeps the
// name and the loser gets a Conflict Event and a metric. Neither writer ever modifies the other
// owner's keys nor a key without an owner put by hand under the same name.
func TestWriterTwoOwnersOneName(t *testing.T) {
	start := time.Now()
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	kubeA := testenv.StartKubeAPIServer(t)
	kubeB := testenv.StartKubeAPIServer(t)
	t.Logf("etcd and two kube-apiservers up after %s", time.Since(start))
	a := gatewayfixture.New(t, kubeA.Config)
	b := gatewayfixture.New(t, kubeB.Config)
	for _, c := range []struct {
		k8s  *gatewayfixture.Cluster
		addr string
	}{{a, "203.0.113.1"}, {b, "203.0.113.2"}} {
		for _, ns := range []string{"shared", "excl"} {
			c.k8s.Namespace(ns)
			c.k8s.Gateway(ns, "gw", gatewayv1.HTTPProtocolType, 80, "", c.addr)
		}
	}
	// Keys without an owner, written by hand under both names.
	handShared := "/skydns/cluster/openmcp/shared/both/hand0001"
	handExcl := "/skydns/cluster/openmcp/excl/solo/hand0001"
	putEtcd(t, cli, handShared, `{"host":"203.0.113.99"}`)
	putEtcd(t, cli, handExcl, `{"host":"203.0.113.98"}`)

	central := runCentral(t, etcd.ClientURL)
	// One writer per cluster and mode; `namespaces` keeps the modes apart.
	wA := runWriter(t, "eu1-shared", etcd.ClientURL, "eu1", kubeA.KubeconfigFile, "openmcp.cluster", "conflict shared", "namespaces shared")
	wB := runWriter(t, "us1-shared", etcd.ClientURL, "us1", kubeB.KubeconfigFile, "openmcp.cluster", "conflict shared", "namespaces shared")
	xA := runWriter(t, "eu1-excl", etcd.ClientURL, "eu1x", kubeA.KubeconfigFile, "openmcp.cluster", "conflict exclusive", "namespaces excl")
	xB := runWriter(t, "us1-excl", etcd.ClientURL, "us1x", kubeB.KubeconfigFile, "openmcp.cluster", "conflict exclusive", "namespaces excl")
	for _, w := range []*coreDNSProcess{wA, wB, xA, xB} {
		w.waitReady(t, 60*time.Second)
	}
	t.Logf("central server and four writers ready after %s", time.Since(start))

	t.Run("shared answers the union", func(t *testing.T) {
		const name = "both.shared.openmcp.cluster"
		a.HTTPRoute("shared", "web", "shared", "gw", name)
		b.HTTPRoute("shared", "web", "shared", "gw", name)
		waitFor(t, 15*time.Second, central.DNS, name+".", dns.TypeA, answersWith("203.0.113.1", "203.0.113.2", "203.0.113.99"))

		prefix := "/skydns/cluster/openmcp/shared/both/"
		keyA1, keyB := ownKey(name, "eu1", "203.0.113.1"), ownKey(name, "us1", "203.0.113.2")
		before := keysUnder(t, cli, prefix)
		if len(before) != 3 || before[keyA1].ModRev == 0 || before[keyB].ModRev == 0 || before[handShared].ModRev == 0 {
			t.Fatalf("want eu1's, us1's and the hand-written key under %s, got %v", prefix, before)
		}

		// Cluster A's load balancer moves: A replaces its own key; B's and the hand key stay.
		a.SetGatewayAddresses("shared", "gw", "203.0.113.11")
		waitFor(t, 10*time.Second, central.DNS, name+".", dns.TypeA, answersWith("203.0.113.11", "203.0.113.2", "203.0.113.99"))
		keyA11 := ownKey(name, "eu1", "203.0.113.11")
		mid := keysUnder(t, cli, prefix)
		if _, ok := mid[keyA1]; ok || mid[keyA11].ModRev == 0 || len(mid) != 3 {
			t.Fatalf("eu1's key should have moved from %s to %s: %v", keyA1, keyA11, mid)
		}
		for _, k := range []string{keyB, handShared} {
			if mid[k] != before[k] {
				t.Errorf("eu1 modified %s: %+v -> %+v", k, before[k], mid[k])
			}
		}
		// And the other way round.
		b.SetGatewayAddresses("shared", "gw", "203.0.113.12")
		waitFor(t, 10*time.Second, central.DNS, name+".", dns.TypeA, answersWith("203.0.113.11", "203.0.113.12", "203.0.113.99"))
		after := keysUnder(t, cli, prefix)
		for _, k := range []string{keyA11, handShared} {
			if after[k] != mid[k] {
				t.Errorf("us1 modified %s: %+v -> %+v", k, mid[k], after[k])
			}
		}
		if len(after) != 3 || after[ownKey(name, "us1", "203.0.113.12")].ModRev == 0 {
			t.Errorf("us1's key should have moved: %v", after)
		}
		for owner, w := range map[string]*coreDNSProcess{"eu1": wA, "us1": wB} {
			if v, _ := w.metric(`coredns_gatewaydns_writer_conflicts_total{owner="` + owner + `"}`); v != 0 {
				t.Errorf("shared mode counted a conflict for %s: %v", owner, v)
			}
		}
	})

	t.Run("exclusive keeps the oldest claim", func(t *testing.T) {
		const name = "solo.excl.openmcp.cluster"
		prefix := "/skydns/cluster/openmcp/excl/solo/"
		a.HTTPRoute("excl", "web", "excl", "gw", name)
		waitFor(t, 15*time.Second, central.DNS, name+".", dns.TypeA, answersWith("203.0.113.1", "203.0.113.98"))
		before := keysUnder(t, cli, prefix)

		b.HTTPRoute("excl", "web", "excl", "gw", name)
		msg := waitEvent(t, b, "excl", "HTTPRoute", "web", "Conflict", 15*time.Second)
		t.Logf("Conflict Event on cluster B's route: %s", msg)
		if !strings.Contains(msg, "eu1x") {
			t.Errorf("the Conflict Event does not name the winner eu1x: %q", msg)
		}
		xB.waitMetric(t, 5*time.Second, `coredns_gatewaydns_writer_conflicts_total{owner="us1x"}`, func(v float64) bool { return v >= 1 })
		if v, _ := xA.metric(`coredns_gatewaydns_writer_conflicts_total{owner="eu1x"}`); v != 0 {
			t.Errorf("the winner counted a conflict: %v", v)
		}
		if evs := a.WarningEvents("excl", "HTTPRoute", "web", "Conflict"); len(evs) != 0 {
			t.Errorf("the winner's route got a Conflict Event: %v", evs[0].Message)
		}
		if r := ask(t, "udp", central.DNS, name+".", dns.TypeA); !answersWith("203.0.113.1", "203.0.113.98")(r) {
			t.Errorf("the loser's address is answered: %v", r)
		}
		after := keysUnder(t, cli, prefix)
		if len(after) != 2 || after[handExcl] != before[handExcl] || after[ownKey(name, "eu1x", "203.0.113.1")] != before[ownKey(name, "eu1x", "203.0.113.1")] {
			t.Errorf("keys of the name changed when the loser came:\nbefore %v\nafter  %v", before, after)
		}
		if _, ok := after[ownKey(name, "us1x", "203.0.113.2")]; ok {
			t.Errorf("the loser wrote its key")
		}
	})
	t.Logf("total %s", time.Since(start))
}

// TestWriterReplicasFailover: two replicas (two binaries) of one owner on one cluster. Exactly
// one leads; kill -9 of the leader hands the leadership to the other within the election TTL
// (2s) and etcd's expiry check, which then publishes a route created meanwhile; a name
// published before is answered on every query during the whole change-over
// (TestALeaderKilledIsReplacedWithinThreeSeconds times ten rounds).
func TestWriterReplicasFailover(t *testing.T) {
	start := time.Now()
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "", "203.0.113.10")
	k8s.HTTPRoute("infra", "before", "infra", "public", "before.eu1.openmcp.cluster")

	central := runCentral(t, etcd.ClientURL)
	replicas := []*coreDNSProcess{
		runWriter(t, "replica-0", etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster"),
		runWriter(t, "replica-1", etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster"),
	}
	for _, r := range replicas {
		r.waitReady(t, 60*time.Second)
	}
	waitFor(t, 15*time.Second, central.DNS, "before.eu1.openmcp.cluster.", dns.TypeA, answersWith("203.0.113.10"))

	leader := soleLeader(t, replicas)
	// Stable: still exactly one after a while.
	time.Sleep(500 * time.Millisecond)
	other := 1 - leader
	if v, _ := replicas[other].metric(leaderSeries); v == 1 {
		t.Fatalf("both replicas lead")
	}
	t.Logf("replica-%d leads (after %s)", leader, time.Since(start))

	cli := etcd.Client(t)
	beforeKeys := keysUnder(t, cli, "/skydns/cluster/openmcp/eu1/before/")
	poll := pollDNS(central.DNS, "before.eu1.openmcp.cluster.", "203.0.113.10")
	killed := time.Now()
	replicas[leader].kill9(t)
	k8s.HTTPRoute("infra", "after", "infra", "public", "after.eu1.openmcp.cluster")

	replicas[other].waitMetric(t, 15*time.Second, leaderSeries, func(v float64) bool { return v == 1 })
	takeover := time.Since(killed)
	waitFor(t, 15*time.Second, central.DNS, "after.eu1.openmcp.cluster.", dns.TypeA, answersWith("203.0.113.10"))
	published := time.Since(killed)
	time.Sleep(300 * time.Millisecond)
	poll.finish(t, "before.eu1 during the failover")
	t.Logf("kill -9 of the leader -> replica-%d leads after %s, the new route is answered after %s", other, takeover, published)
	// The new leader's start-up resync rewrote nothing that did not change (deterministic keys).
	if after := keysUnder(t, cli, "/skydns/cluster/openmcp/eu1/before/"); len(after) != 1 || fmt.Sprint(after) != fmt.Sprint(beforeKeys) {
		t.Errorf("the takeover rewrote before.eu1's key:\nbefore %v\nafter  %v", beforeKeys, after)
	}
	if published > 3*time.Second {
		t.Errorf("the new route was answered %s after the kill, want within 3s (the election TTL, 2s, plus a little)", published)
	}
	t.Logf("total %s", time.Since(start))
}

// TestWriterEtcdAuthConfinesCredentials: etcd with authentication; the writer's user may only
// read and write its cluster's subtree (and its leader election). It publishes its names; a
// route asking for a name outside that subtree (let through by the plugin's own domain filter)
// is refused by etcd, reported as a PublishFailed Warning Event on the route and counted, and
// the writer keeps running, ready, and publishing later changes.
func TestWriterEtcdAuthConfinesCredentials(t *testing.T) {
	start := time.Now()
	etcd := testenv.StartEtcd(t)
	auth := etcd.EnableAuth(t, "eu1", "eu1-secret", "/skydns/cluster/openmcp/eu1/")
	root := etcd.Client(t)
	ctx := context.Background()
	leaderPrefix := "/gatewaydns/leader/eu1/"
	if _, err := root.RoleGrantPermission(ctx, auth.Role, leaderPrefix, clientv3.GetPrefixRangeEnd(leaderPrefix), clientv3.PermissionType(clientv3.PermReadWrite)); err != nil {
		t.Fatal(err)
	}
	// The central server only reads the zone.
	for _, step := range []func() error{
		func() error { _, err := root.RoleAdd(ctx, "dns-read"); return err },
		func() error {
			// The zone's prefix only: the server reads and watches nothing else.
			_, err := root.RoleGrantPermission(ctx, "dns-read", "/skydns/cluster/openmcp/", clientv3.GetPrefixRangeEnd("/skydns/cluster/openmcp/"), clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error { _, err := root.UserAdd(ctx, "dns", "dns-secret"); return err },
		func() error { _, err := root.UserGrantRole(ctx, "dns", "dns-read"); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Namespace("shop")
	k8s.Gateway("infra", "open", gatewayv1.HTTPProtocolType, 80, "", "203.0.113.10")
	k8s.HTTPRoute("shop", "app", "infra", "open", "app.eu1.openmcp.cluster")

	central := startCorefile(t, "central-auth.Corefile", fmt.Sprintf("openmcp.cluster {\n    errors\n    ready\n    prometheus :9153\n    gatewaydns {\n        endpoint %s\n        credentials dns dns-secret\n    }\n}\n", etcd.ClientURL))
	central.waitReady(t, 30*time.Second)
	// domain-filter is the whole zone: only etcd stands between the writer and other clusters' names.
	w := runWriter(t, "eu1-auth", etcd.ClientURL, "eu1", kube.KubeconfigFile, "openmcp.cluster", "credentials eu1 eu1-secret")
	w.waitReady(t, 60*time.Second)
	waitFor(t, 15*time.Second, central.DNS, "app.eu1.openmcp.cluster.", dns.TypeA, answersWith("203.0.113.10"))
	w.waitMetric(t, 5*time.Second, `coredns_gatewaydns_writer_leader{owner="eu1"}`, func(v float64) bool { return v == 1 })

	const failures = `coredns_gatewaydns_writer_failures_total{owner="eu1"}`
	// The start-up resync's scan of the zone (Zones = the domain filter, here the whole zone) is
	// refused too, and counted: wait for that before taking the count the intruder must raise.
	base := w.waitMetric(t, 10*time.Second, failures, func(v float64) bool { return v >= 1 })
	k8s.HTTPRoute("shop", "intruder", "infra", "open", "web.us1.openmcp.cluster")
	msg := waitEvent(t, k8s, "shop", "HTTPRoute", "intruder", "PublishFailed", 15*time.Second)
	t.Logf("PublishFailed Event: %s", msg)
	w.waitMetric(t, 5*time.Second, failures, func(v float64) bool { return v > base })
	if r := ask(t, "udp", central.DNS, "web.us1.openmcp.cluster.", dns.TypeA); !isNXDOMAIN(r) {
		t.Errorf("a name outside the credentials' prefix was published: %v", r)
	}
	if got := keysUnder(t, root, "/skydns/cluster/openmcp/us1/"); len(got) != 0 {
		t.Errorf("keys under us1: %v", got)
	}
	// Still alive, still ready, still publishing.
	if !w.alive() {
		t.Fatal("the writer exited")
	}
	if _, code := httpGet("http://" + w.Ready + "/ready"); code != 200 {
		t.Errorf("the writer is not ready any more: %d", code)
	}
	k8s.HTTPRoute("shop", "later", "infra", "open", "later.eu1.openmcp.cluster")
	waitFor(t, 10*time.Second, central.DNS, "later.eu1.openmcp.cluster.", dns.TypeA, answersWith("203.0.113.10"))
	k8s.SetGatewayAddresses("infra", "open", "203.0.113.20")
	waitFor(t, 10*time.Second, central.DNS, "app.eu1.openmcp.cluster.", dns.TypeA, answersWith("203.0.113.20"))
	t.Logf("total %s", time.Since(start))
}

// TestWriterPoliciesAndLease: `policy upsert-only` never deletes (a deleted route's name keeps
// answering), `policy create-only` never updates (a Gateway's new address is not taken, the old
// one keeps answering, a new name is still created), and with `lease 15s` (the shortest that
// outlives a failover is 7s: election TTL 2s + 5s) a running writer's records stay while a
// stopped writer's records expire about the lease (and the server's grace) after it stopped.
func TestWriterPoliciesAndLease(t *testing.T) {
	start := time.Now()
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	for ns, addr := range map[string]string{"up": "203.0.113.21", "co": "203.0.113.22", "ls": "203.0.113.23"} {
		k8s.Namespace(ns)
		k8s.Gateway(ns, "gw", gatewayv1.HTTPProtocolType, 80, "", addr)
		k8s.HTTPRoute(ns, "web", ns, "gw", "web."+ns+".openmcp.cluster")
	}
	central := runCentral(t, etcd.ClientURL)
	up := runWriter(t, "upsert-only", etcd.ClientURL, "up", kube.KubeconfigFile, "up.openmcp.cluster", "policy upsert-only", "namespaces up")
	co := runWriter(t, "create-only", etcd.ClientURL, "co", kube.KubeconfigFile, "co.openmcp.cluster", "policy create-only", "namespaces co")
	ls := runWriter(t, "lease", etcd.ClientURL, "ls", kube.KubeconfigFile, "ls.openmcp.cluster", "lease 15s", "namespaces ls")
	for _, w := range []*coreDNSProcess{up, co, ls} {
		w.waitReady(t, 60*time.Second)
	}
	for ns, addr := range map[string]string{"up": "203.0.113.21", "co": "203.0.113.22", "ls": "203.0.113.23"} {
		waitFor(t, 15*time.Second, central.DNS, "web."+ns+".openmcp.cluster.", dns.TypeA, answersWith(addr))
	}
	leaseKeys := keysUnder(t, cli, "/skydns/cluster/openmcp/ls/")
	if k := leaseKeys[ownKey("web.ls.openmcp.cluster", "ls", "203.0.113.23")]; len(leaseKeys) != 1 || k.Lease == 0 {
		t.Fatalf("the lease writer's key should carry a lease: %v", leaseKeys)
	}
	if k := keysUnder(t, cli, "/skydns/cluster/openmcp/up/")[ownKey("web.up.openmcp.cluster", "up", "203.0.113.21")]; k.Lease != 0 || k.ModRev == 0 {
		t.Fatalf("without lease, no lease on the key: %+v", k)
	}
	leaseSince := time.Now()
	leasePoll := pollDNS(central.DNS, "web.ls.openmcp.cluster.", "203.0.113.23")

	t.Run("upsert-only never deletes", func(t *testing.T) {
		const skipped = `coredns_gatewaydns_writer_skipped_total{owner="up",reason="policy"}`
		base, _ := up.metric(skipped)
		poll := pollDNS(central.DNS, "web.up.openmcp.cluster.", "203.0.113.21")
		k8s.DeleteHTTPRoute("up", "web")
		up.waitMetric(t, 10*time.Second, skipped, func(v float64) bool { return v > base })
		time.Sleep(300 * time.Millisecond)
		poll.finish(t, "web.up after its route was deleted")
		if got := keysUnder(t, cli, "/skydns/cluster/openmcp/up/"); len(got) != 1 {
			t.Errorf("want the key kept, got %v", got)
		}
	})

	t.Run("create-only never updates", func(t *testing.T) {
		const skipped = `coredns_gatewaydns_writer_skipped_total{owner="co",reason="policy"}`
		base, _ := co.metric(skipped)
		before := keysUnder(t, cli, "/skydns/cluster/openmcp/co/web/")
		poll := pollDNS(central.DNS, "web.co.openmcp.cluster.", "203.0.113.22")
		k8s.SetGatewayAddresses("co", "gw", "203.0.113.32")
		co.waitMetric(t, 10*time.Second, skipped, func(v float64) bool { return v > base })
		time.Sleep(300 * time.Millisecond)
		poll.finish(t, "web.co after its Gateway's address changed")
		if after := keysUnder(t, cli, "/skydns/cluster/openmcp/co/web/"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("create-only changed keys:\nbefore %v\nafter  %v", before, after)
		}
		// It still creates names it holds no key for, with the Gateway's current address.
		k8s.HTTPRoute("co", "new", "co", "gw", "new.co.openmcp.cluster")
		waitFor(t, 10*time.Second, central.DNS, "new.co.openmcp.cluster.", dns.TypeA, answersWith("203.0.113.32"))
	})

	t.Run("lease expires a stopped writer's records", func(t *testing.T) {
		// A running writer's leased records outlive the lease: it keeps the lease alive.
		// Watched by leasePoll for one and a half leases.
		if wait := 22500*time.Millisecond - time.Since(leaseSince); wait > 0 {
			time.Sleep(wait)
		}
		leasePoll.finish(t, fmt.Sprintf("web.ls during %s of a running writer with lease 15s", time.Since(leaseSince).Round(100*time.Millisecond)))

		stopped := time.Now()
		ls.stop(t) // SIGTERM: a clean shutdown, which does not revoke the records' lease
		stopTook := time.Since(stopped)
		waitFor(t, 30*time.Second, central.DNS, "web.ls.openmcp.cluster.", dns.TypeA, isNXDOMAIN)
		gone := time.Since(stopped)
		t.Logf("SIGTERM took %s; the records were gone %s after it", stopTook, gone)
		// The writer renews the lease every quarter of its TTL, so 11.25-15s of it are left at the
		// stop; etcd checks expiry every 0.5s, and the server answers a key its lease expired for
		// mirror.DefaultGrace (5s) more, for its owner to publish it again.
		if gone < 11*time.Second || gone > 15*time.Second+500*time.Millisecond+mirror.DefaultGrace+1500*time.Millisecond {
			t.Errorf("the records disappeared %s after the writer stopped, want about the lease and the server's grace (15s + 5s, at least 11.25s of the lease left at the stop)", gone)
		}
		if got := keysUnder(t, cli, "/skydns/cluster/openmcp/ls/"); len(got) != 0 {
			t.Errorf("keys left: %v", got)
		}
		// The writers without lease keep their records.
		if r := ask(t, "udp", central.DNS, "web.up.openmcp.cluster.", dns.TypeA); !answersWith("203.0.113.21")(r) {
			t.Errorf("web.up: %v", r)
		}
	})
	t.Logf("total %s", time.Since(start))
}

// TestWriterAdoptsExternalDNSKeys: a name external-dns published in strict-ownership mode
// (random 8-hex suffix, owner eu1) is served; a writer started with owner eu1 for the same name
// and address adopts it: the random key is replaced by the deterministic key, and no query
// during the change-over goes unanswered.
func TestWriterAdoptsExternalDNSKeys(t *testing.T) {
	start := time.Now()
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	const name = "app.eu1.openmcp.cluster"
	newKey := ownKey(name, "eu1", "203.0.113.10")
	var oldKey string
	for oldKey == "" || oldKey == newKey {
		var suffix [4]byte
		if _, err := rand.Read(suffix[:]); err != nil {
			t.Fatal(err)
		}
		oldKey = "/skydns/cluster/openmcp/eu1/app/" + hex.EncodeToString(suffix[:])
	}
	// external-dns's coredns provider (--coredns-strictly-owned): key <prefix><reversed name>/<%08x>,
	// value a Service with "text" omitted when empty (omitempty) and the owner.
	putEtcd(t, cli, oldKey, `{"host":"203.0.113.10","ttl":300,"targetstrip":1,"owner":"eu1"}`)

	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Namespace("shop")
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "*.eu1.openmcp.cluster", "203.0.113.10")
	k8s.HTTPRoute("shop", "app", "infra", "public", name)

	central := runCentral(t, etcd.ClientURL)
	waitFor(t, 5*time.Second, central.DNS, name+".", dns.TypeA, answersWith("203.0.113.10"))
	poll := pollDNS(central.DNS, name+".", "203.0.113.10")

	began := time.Now()
	w := runWriter(t, "eu1-adopt", etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster")
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := keysUnder(t, cli, "/skydns/cluster/openmcp/eu1/app/")
		if _, old := got[oldKey]; !old && len(got) == 1 && got[newKey].ModRev != 0 {
			if owner := record.OwnerOf([]byte(got[newKey].Value)); owner != "eu1" {
				t.Fatalf("adopted key %s has owner %q", newKey, owner)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not adopted within 60s: %v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("adopted %s -> %s %s after the writer started", oldKey, newKey, time.Since(began))
	w.waitReady(t, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	poll.finish(t, name+" during the adoption")
	t.Logf("total %s", time.Since(start))
}

// TestDryRunWriterLogsThePlanAndWritesNothing: the built binary with `dry-run` beside a real
// kube-apiserver and etcd logs each change it would make once, counts it, and writes no record.
func TestDryRunWriterLogsThePlanAndWritesNothing(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Gateway("infra", "gw", gatewayv1.HTTPProtocolType, 80, "", "203.0.113.81")
	k8s.HTTPRoute("infra", "app", "infra", "gw", "app.eu1.openmcp.cluster")
	w := runWriter(t, "eu1", etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster", "dry-run")
	w.waitReady(t, 60*time.Second)

	line := func(name string) string {
		return `Dry run: owner "eu1" would write ` + name + " +/skydns/cluster/openmcp/eu1/"
	}
	waitLogged := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); !strings.Contains(w.log.String(), what); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no log line %q within 15s:\n%s", what, w.log.String())
			}
		}
	}
	waitLogged(line("app.eu1.openmcp.cluster"))
	k8s.HTTPRoute("infra", "api", "infra", "gw", "api.eu1.openmcp.cluster")
	waitLogged(line("api.eu1.openmcp.cluster"))
	if n := strings.Count(w.log.String(), line("app.eu1.openmcp.cluster")); n != 1 {
		t.Errorf("the change of app was logged %d times, want once", n)
	}
	metrics, _ := httpGet("http://" + w.Metrics + "/metrics")
	checkSeries(t, metrics, `coredns_gatewaydns_writer_dry_run_ops_total{op="put",owner="eu1"}`, 2)
	// Not a leader of eu1: beside eu1's real writer, sum by (owner) stays 1.
	if m := matching(metrics, `coredns_gatewaydns_writer_leader{owner="eu1"}`); len(m) != 0 {
		t.Errorf("a dry run exports writer_leader: %v", m)
	}
	resp, err := etcd.Client(t).Get(t.Context(), "/skydns/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Fatalf("a dry run wrote %d records", resp.Count)
	}
}
