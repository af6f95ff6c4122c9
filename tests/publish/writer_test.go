package publish

// End-to-end acceptance of the multi-cluster writer (issue 4), through the BUILT binary: real
// kube-apiservers (one per cluster), one real etcd, writers and a central server as separate
// coredns processes, and real DNS questions. The writer's own tests (plugin/gatewaydns/writer)
// cover it in isolation against a real etcd; these prove the same promises hold once the
// plugin, its Corefile options, Kubernetes and etcd are put together.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/promtext"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/mirror"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

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
	e2e.PutEtcd(t, cli, handShared, `{"host":"203.0.113.99"}`)
	e2e.PutEtcd(t, cli, handExcl, `{"host":"203.0.113.98"}`)

	central := e2e.RunCentral(t, etcd.ClientURL)
	// One writer per cluster and mode; `namespaces` keeps the modes apart.
	wA := e2e.RunWriter(t, "eu1-shared", etcd.ClientURL, "eu1", kubeA.KubeconfigFile, "openmcp.cluster", "conflict shared", "namespaces shared")
	wB := e2e.RunWriter(t, "us1-shared", etcd.ClientURL, "us1", kubeB.KubeconfigFile, "openmcp.cluster", "conflict shared", "namespaces shared")
	xA := e2e.RunWriter(t, "eu1-excl", etcd.ClientURL, "eu1x", kubeA.KubeconfigFile, "openmcp.cluster", "conflict exclusive", "namespaces excl")
	xB := e2e.RunWriter(t, "us1-excl", etcd.ClientURL, "us1x", kubeB.KubeconfigFile, "openmcp.cluster", "conflict exclusive", "namespaces excl")
	for _, w := range []*corednsproc.Process{wA, wB, xA, xB} {
		w.WaitReady(t, 60*time.Second)
	}
	t.Logf("central server and four writers ready after %s", time.Since(start))

	t.Run("shared answers the union", func(t *testing.T) {
		const name = "both.shared.openmcp.cluster"
		a.HTTPRoute("shared", "web", "shared", "gw", name)
		b.HTTPRoute("shared", "web", "shared", "gw", name)
		e2e.WaitFor(t, 15*time.Second, central.DNS, name+".", dns.TypeA, e2e.AnswersWith("203.0.113.1", "203.0.113.2", "203.0.113.99"))

		prefix := "/skydns/cluster/openmcp/shared/both/"
		keyA1, keyB := e2e.OwnKey(name, "eu1", "203.0.113.1"), e2e.OwnKey(name, "us1", "203.0.113.2")
		before := e2e.KeysUnder(t, cli, prefix)
		if len(before) != 3 || before[keyA1].ModRev == 0 || before[keyB].ModRev == 0 || before[handShared].ModRev == 0 {
			t.Fatalf("want eu1's, us1's and the hand-written key under %s, got %v", prefix, before)
		}

		// Cluster A's load balancer moves: A replaces its own key; B's and the hand key stay.
		a.SetGatewayAddresses("shared", "gw", "203.0.113.11")
		e2e.WaitFor(t, 10*time.Second, central.DNS, name+".", dns.TypeA, e2e.AnswersWith("203.0.113.11", "203.0.113.2", "203.0.113.99"))
		keyA11 := e2e.OwnKey(name, "eu1", "203.0.113.11")
		mid := e2e.KeysUnder(t, cli, prefix)
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
		e2e.WaitFor(t, 10*time.Second, central.DNS, name+".", dns.TypeA, e2e.AnswersWith("203.0.113.11", "203.0.113.12", "203.0.113.99"))
		after := e2e.KeysUnder(t, cli, prefix)
		for _, k := range []string{keyA11, handShared} {
			if after[k] != mid[k] {
				t.Errorf("us1 modified %s: %+v -> %+v", k, mid[k], after[k])
			}
		}
		if len(after) != 3 || after[e2e.OwnKey(name, "us1", "203.0.113.12")].ModRev == 0 {
			t.Errorf("us1's key should have moved: %v", after)
		}
		for owner, w := range map[string]*corednsproc.Process{"eu1": wA, "us1": wB} {
			if v, _ := w.Metric(`coredns_gatewaydns_writer_conflicts_total{owner="` + owner + `"}`); v != 0 {
				t.Errorf("shared mode counted a conflict for %s: %v", owner, v)
			}
		}
	})

	t.Run("exclusive keeps the oldest claim", func(t *testing.T) {
		const name = "solo.excl.openmcp.cluster"
		prefix := "/skydns/cluster/openmcp/excl/solo/"
		a.HTTPRoute("excl", "web", "excl", "gw", name)
		e2e.WaitFor(t, 15*time.Second, central.DNS, name+".", dns.TypeA, e2e.AnswersWith("203.0.113.1", "203.0.113.98"))
		before := e2e.KeysUnder(t, cli, prefix)

		b.HTTPRoute("excl", "web", "excl", "gw", name)
		msg := e2e.WaitEvent(t, b, "excl", "HTTPRoute", "web", "Conflict", 15*time.Second)
		t.Logf("Conflict Event on cluster B's route: %s", msg)
		if !strings.Contains(msg, "eu1x") {
			t.Errorf("the Conflict Event does not name the winner eu1x: %q", msg)
		}
		xB.WaitMetric(t, 5*time.Second, `coredns_gatewaydns_writer_conflicts_total{owner="us1x"}`, func(v float64) bool { return v >= 1 })
		if v, _ := xA.Metric(`coredns_gatewaydns_writer_conflicts_total{owner="eu1x"}`); v != 0 {
			t.Errorf("the winner counted a conflict: %v", v)
		}
		if evs := a.WarningEvents("excl", "HTTPRoute", "web", "Conflict"); len(evs) != 0 {
			t.Errorf("the winner's route got a Conflict Event: %v", evs[0].Message)
		}
		if r := e2e.Ask(t, "udp", central.DNS, name+".", dns.TypeA); !e2e.AnswersWith("203.0.113.1", "203.0.113.98")(r) {
			t.Errorf("the loser's address is answered: %v", r)
		}
		after := e2e.KeysUnder(t, cli, prefix)
		if len(after) != 2 || after[handExcl] != before[handExcl] || after[e2e.OwnKey(name, "eu1x", "203.0.113.1")] != before[e2e.OwnKey(name, "eu1x", "203.0.113.1")] {
			t.Errorf("keys of the name changed when the loser came:\nbefore %v\nafter  %v", before, after)
		}
		if _, ok := after[e2e.OwnKey(name, "us1x", "203.0.113.2")]; ok {
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

	central := e2e.RunCentral(t, etcd.ClientURL)
	replicas := []*corednsproc.Process{
		e2e.RunWriter(t, "replica-0", etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster"),
		e2e.RunWriter(t, "replica-1", etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster"),
	}
	for _, r := range replicas {
		r.WaitReady(t, 60*time.Second)
	}
	e2e.WaitFor(t, 15*time.Second, central.DNS, "before.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.10"))

	leader := soleLeader(t, replicas)
	// Stable: still exactly one after a while.
	time.Sleep(500 * time.Millisecond)
	other := 1 - leader
	if v, _ := replicas[other].Metric(leaderSeries); v == 1 {
		t.Fatalf("both replicas lead")
	}
	t.Logf("replica-%d leads (after %s)", leader, time.Since(start))

	cli := etcd.Client(t)
	beforeKeys := e2e.KeysUnder(t, cli, "/skydns/cluster/openmcp/eu1/before/")
	poll := e2e.PollDNS(central.DNS, "before.eu1.openmcp.cluster.", "203.0.113.10")
	killed := time.Now()
	replicas[leader].Kill()
	k8s.HTTPRoute("infra", "after", "infra", "public", "after.eu1.openmcp.cluster")

	replicas[other].WaitMetric(t, 15*time.Second, leaderSeries, func(v float64) bool { return v == 1 })
	takeover := time.Since(killed)
	e2e.WaitFor(t, 15*time.Second, central.DNS, "after.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.10"))
	published := time.Since(killed)
	time.Sleep(300 * time.Millisecond)
	poll.Finish(t, "before.eu1 during the failover")
	t.Logf("kill -9 of the leader -> replica-%d leads after %s, the new route is answered after %s", other, takeover, published)
	// The new leader's start-up resync rewrote nothing that did not change (deterministic keys).
	if after := e2e.KeysUnder(t, cli, "/skydns/cluster/openmcp/eu1/before/"); len(after) != 1 || fmt.Sprint(after) != fmt.Sprint(beforeKeys) {
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

	central := corednsproc.Start(t, "central-auth.Corefile", fmt.Sprintf("openmcp.cluster {\n    errors\n    ready\n    prometheus :9153\n    gatewaydns {\n        endpoint %s\n        credentials dns dns-secret\n    }\n}\n", etcd.ClientURL))
	central.WaitReady(t, 30*time.Second)
	// domain-filter is the whole zone: only etcd stands between the writer and other clusters' names.
	w := e2e.RunWriter(t, "eu1-auth", etcd.ClientURL, "eu1", kube.KubeconfigFile, "openmcp.cluster", "credentials eu1 eu1-secret")
	w.WaitReady(t, 60*time.Second)
	e2e.WaitFor(t, 15*time.Second, central.DNS, "app.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.10"))
	w.WaitMetric(t, 5*time.Second, `coredns_gatewaydns_writer_leader{owner="eu1"}`, func(v float64) bool { return v == 1 })

	const failures = `coredns_gatewaydns_writer_failures_total{owner="eu1"}`
	// The start-up resync's scan of the zone (Zones = the domain filter, here the whole zone) is
	// refused too, and counted: wait for that before taking the count the intruder must raise.
	base := w.WaitMetric(t, 10*time.Second, failures, func(v float64) bool { return v >= 1 })
	k8s.HTTPRoute("shop", "intruder", "infra", "open", "web.us1.openmcp.cluster")
	msg := e2e.WaitEvent(t, k8s, "shop", "HTTPRoute", "intruder", "PublishFailed", 15*time.Second)
	t.Logf("PublishFailed Event: %s", msg)
	w.WaitMetric(t, 5*time.Second, failures, func(v float64) bool { return v > base })
	if r := e2e.Ask(t, "udp", central.DNS, "web.us1.openmcp.cluster.", dns.TypeA); !e2e.IsNXDOMAIN(r) {
		t.Errorf("a name outside the credentials' prefix was published: %v", r)
	}
	if got := e2e.KeysUnder(t, root, "/skydns/cluster/openmcp/us1/"); len(got) != 0 {
		t.Errorf("keys under us1: %v", got)
	}
	// Still alive, still ready, still publishing.
	if !w.Running() {
		t.Fatal("the writer exited")
	}
	if _, code := e2e.HTTPGet("http://" + w.Ready + "/ready"); code != 200 {
		t.Errorf("the writer is not ready any more: %d", code)
	}
	k8s.HTTPRoute("shop", "later", "infra", "open", "later.eu1.openmcp.cluster")
	e2e.WaitFor(t, 10*time.Second, central.DNS, "later.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.10"))
	k8s.SetGatewayAddresses("infra", "open", "203.0.113.20")
	e2e.WaitFor(t, 10*time.Second, central.DNS, "app.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.20"))
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
	central := e2e.RunCentral(t, etcd.ClientURL)
	up := e2e.RunWriter(t, "upsert-only", etcd.ClientURL, "up", kube.KubeconfigFile, "up.openmcp.cluster", "policy upsert-only", "namespaces up")
	co := e2e.RunWriter(t, "create-only", etcd.ClientURL, "co", kube.KubeconfigFile, "co.openmcp.cluster", "policy create-only", "namespaces co")
	ls := e2e.RunWriter(t, "lease", etcd.ClientURL, "ls", kube.KubeconfigFile, "ls.openmcp.cluster", "lease 15s", "namespaces ls")
	for _, w := range []*corednsproc.Process{up, co, ls} {
		w.WaitReady(t, 60*time.Second)
	}
	for ns, addr := range map[string]string{"up": "203.0.113.21", "co": "203.0.113.22", "ls": "203.0.113.23"} {
		e2e.WaitFor(t, 15*time.Second, central.DNS, "web."+ns+".openmcp.cluster.", dns.TypeA, e2e.AnswersWith(addr))
	}
	leaseKeys := e2e.KeysUnder(t, cli, "/skydns/cluster/openmcp/ls/")
	if k := leaseKeys[e2e.OwnKey("web.ls.openmcp.cluster", "ls", "203.0.113.23")]; len(leaseKeys) != 1 || k.Lease == 0 {
		t.Fatalf("the lease writer's key should carry a lease: %v", leaseKeys)
	}
	if k := e2e.KeysUnder(t, cli, "/skydns/cluster/openmcp/up/")[e2e.OwnKey("web.up.openmcp.cluster", "up", "203.0.113.21")]; k.Lease != 0 || k.ModRev == 0 {
		t.Fatalf("without lease, no lease on the key: %+v", k)
	}
	leaseSince := time.Now()
	leasePoll := e2e.PollDNS(central.DNS, "web.ls.openmcp.cluster.", "203.0.113.23")

	t.Run("upsert-only never deletes", func(t *testing.T) {
		const skipped = `coredns_gatewaydns_writer_skipped_total{owner="up",reason="policy"}`
		base, _ := up.Metric(skipped)
		poll := e2e.PollDNS(central.DNS, "web.up.openmcp.cluster.", "203.0.113.21")
		k8s.DeleteHTTPRoute("up", "web")
		up.WaitMetric(t, 10*time.Second, skipped, func(v float64) bool { return v > base })
		time.Sleep(300 * time.Millisecond)
		poll.Finish(t, "web.up after its route was deleted")
		if got := e2e.KeysUnder(t, cli, "/skydns/cluster/openmcp/up/"); len(got) != 1 {
			t.Errorf("want the key kept, got %v", got)
		}
	})

	t.Run("create-only never updates", func(t *testing.T) {
		const skipped = `coredns_gatewaydns_writer_skipped_total{owner="co",reason="policy"}`
		base, _ := co.Metric(skipped)
		before := e2e.KeysUnder(t, cli, "/skydns/cluster/openmcp/co/web/")
		poll := e2e.PollDNS(central.DNS, "web.co.openmcp.cluster.", "203.0.113.22")
		k8s.SetGatewayAddresses("co", "gw", "203.0.113.32")
		co.WaitMetric(t, 10*time.Second, skipped, func(v float64) bool { return v > base })
		time.Sleep(300 * time.Millisecond)
		poll.Finish(t, "web.co after its Gateway's address changed")
		if after := e2e.KeysUnder(t, cli, "/skydns/cluster/openmcp/co/web/"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("create-only changed keys:\nbefore %v\nafter  %v", before, after)
		}
		// It still creates names it holds no key for, with the Gateway's current address.
		k8s.HTTPRoute("co", "new", "co", "gw", "new.co.openmcp.cluster")
		e2e.WaitFor(t, 10*time.Second, central.DNS, "new.co.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.32"))
	})

	t.Run("lease expires a stopped writer's records", func(t *testing.T) {
		// A running writer's leased records outlive the lease: it keeps the lease alive.
		// Watched by leasePoll for one and a half leases.
		if wait := 22500*time.Millisecond - time.Since(leaseSince); wait > 0 {
			time.Sleep(wait)
		}
		leasePoll.Finish(t, fmt.Sprintf("web.ls during %s of a running writer with lease 15s", time.Since(leaseSince).Round(100*time.Millisecond)))

		stopped := time.Now()
		ls.Stop(t) // SIGTERM: a clean shutdown, which does not revoke the records' lease
		stopTook := time.Since(stopped)
		e2e.WaitFor(t, 30*time.Second, central.DNS, "web.ls.openmcp.cluster.", dns.TypeA, e2e.IsNXDOMAIN)
		gone := time.Since(stopped)
		t.Logf("SIGTERM took %s; the records were gone %s after it", stopTook, gone)
		// The writer renews the lease every quarter of its TTL, so 11.25-15s of it are left at the
		// stop; etcd checks expiry every 0.5s, and the server answers a key its lease expired for
		// mirror.DefaultGrace (5s) more, for its owner to publish it again.
		if gone < 11*time.Second || gone > 15*time.Second+500*time.Millisecond+mirror.DefaultGrace+1500*time.Millisecond {
			t.Errorf("the records disappeared %s after the writer stopped, want about the lease and the server's grace (15s + 5s, at least 11.25s of the lease left at the stop)", gone)
		}
		if got := e2e.KeysUnder(t, cli, "/skydns/cluster/openmcp/ls/"); len(got) != 0 {
			t.Errorf("keys left: %v", got)
		}
		// The writers without lease keep their records.
		if r := e2e.Ask(t, "udp", central.DNS, "web.up.openmcp.cluster.", dns.TypeA); !e2e.AnswersWith("203.0.113.21")(r) {
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
	newKey := e2e.OwnKey(name, "eu1", "203.0.113.10")
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
	e2e.PutEtcd(t, cli, oldKey, `{"host":"203.0.113.10","ttl":300,"targetstrip":1,"owner":"eu1"}`)

	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Namespace("shop")
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "*.eu1.openmcp.cluster", "203.0.113.10")
	k8s.HTTPRoute("shop", "app", "infra", "public", name)

	central := e2e.RunCentral(t, etcd.ClientURL)
	e2e.WaitFor(t, 5*time.Second, central.DNS, name+".", dns.TypeA, e2e.AnswersWith("203.0.113.10"))
	poll := e2e.PollDNS(central.DNS, name+".", "203.0.113.10")

	began := time.Now()
	w := e2e.RunWriter(t, "eu1-adopt", etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster")
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := e2e.KeysUnder(t, cli, "/skydns/cluster/openmcp/eu1/app/")
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
	w.WaitReady(t, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	poll.Finish(t, name+" during the adoption")
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
	w := e2e.RunWriter(t, "eu1", etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster", "dry-run")
	w.WaitReady(t, 60*time.Second)

	line := func(name string) string {
		return `Dry run: owner "eu1" would write ` + name + " +/skydns/cluster/openmcp/eu1/"
	}
	w.WaitOutput(t, line("app.eu1.openmcp.cluster"), 15*time.Second)
	k8s.HTTPRoute("infra", "api", "infra", "gw", "api.eu1.openmcp.cluster")
	w.WaitOutput(t, line("api.eu1.openmcp.cluster"), 15*time.Second)
	if n := strings.Count(w.Output(), line("app.eu1.openmcp.cluster")); n != 1 {
		t.Errorf("the change of app was logged %d times, want once", n)
	}
	metrics, _ := e2e.HTTPGet("http://" + w.Metrics + "/metrics")
	e2e.CheckSeries(t, metrics, `coredns_gatewaydns_writer_dry_run_ops_total{op="put",owner="eu1"}`, 2)
	// Not a leader of eu1: beside eu1's real writer, sum by (owner) stays 1.
	if m := promtext.Matching(metrics, `coredns_gatewaydns_writer_leader{owner="eu1"}`); len(m) != 0 {
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
