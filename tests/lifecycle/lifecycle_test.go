// Package lifecycle tests stops and reloads of the binary: bounded in every state of etcd and
// the kube-apiserver, answering throughout (reload_test.go, reload_outage_test.go), leaving no
// goroutine, watch or lease behind, and a shutdown that leaves nothing running.
package lifecycle

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/tcpproxy"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// Lifecycle tests: stop and reload are bounded, and keep answering, whatever state etcd and
// the kube-apiserver are in. "Black-holed" is a peer that accepts connections and never
// answers (tcpproxy.BlackHole): every request waits, which a refused connection never shows.

// kubeconfigVia writes a copy of kube's kubeconfig that reaches the API server at addr (a
// proxy) instead.
func kubeconfigVia(t *testing.T, kube *testenv.Kube, addr string) string {
	t.Helper()
	b, err := os.ReadFile(kube.KubeconfigFile)
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(kube.Config.Host, "https://")
	host = strings.TrimSuffix(host, "/")
	if !strings.Contains(string(b), host) {
		t.Fatalf("kubeconfig does not name %s", host)
	}
	path := t.TempDir() + "/kubeconfig"
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(b), host, addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// deadAddr is a loopback address where nothing listens: connections are refused.
func deadAddr(t *testing.T) string { return fmt.Sprintf("127.0.0.1:%d", corednsproc.FreePort(t)) }

// TestStopIsBoundedInEveryState: in each state, a reload that changes the stanza completes
// within 5 s, and then SIGTERM ends the process within 3 s (no lameduck is configured), with
// the stanza serving and publishing, whatever etcd and the kube-apiserver do: answering,
// refusing, black-holed, from the start or after the stanza got going, while the replica
// leads and while it campaigns behind another. Every series of the stanza is exported from
// its first second, at zero.
func TestStopIsBoundedInEveryState(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "", "203.0.113.10")
	k8s.HTTPRoute("infra", "web", "infra", "public", "web.eu1.openmcp.cluster")

	const limit = 3 * time.Second
	cases := []struct {
		name string
		// before runs before the process starts; it returns the etcd and kube-apiserver
		// addresses to give it.
		before func(t *testing.T) (etcdURL, kubeconfig string, etcdP, kubeP *tcpproxy.Proxy)
		// then brings the running process into the state; nil: stop it as soon as its
		// metrics are up.
		then func(t *testing.T, p *corednsproc.Process, etcdP, kubeP *tcpproxy.Proxy)
	}{
		{
			name: "leading, everything answers",
			then: func(t *testing.T, p *corednsproc.Process, _, _ *tcpproxy.Proxy) {
				p.WaitMetric(t, 30*time.Second, fmt.Sprintf(e2e.LeaderOf, "stop-leading"), e2e.IsOne)
			},
		},
		{
			name: "campaigning behind another replica",
			then: func(t *testing.T, p *corednsproc.Process, _, _ *tcpproxy.Proxy) {
				p.WaitReady(t, 30*time.Second)
			},
		},
		{
			name: "leading, then etcd refuses",
			then: func(t *testing.T, p *corednsproc.Process, etcdP, _ *tcpproxy.Proxy) {
				p.WaitMetric(t, 30*time.Second, fmt.Sprintf(e2e.LeaderOf, "stop-refused"), e2e.IsOne)
				etcdP.Cut()
				p.WaitMetric(t, 30*time.Second, e2e.ReachableOf, e2e.IsZero)
			},
		},
		{
			name: "leading, then etcd black-holed",
			then: func(t *testing.T, p *corednsproc.Process, etcdP, _ *tcpproxy.Proxy) {
				p.WaitMetric(t, 30*time.Second, fmt.Sprintf(e2e.LeaderOf, "stop-hung"), e2e.IsOne)
				etcdP.BlackHole()
				p.WaitMetric(t, 30*time.Second, e2e.ReachableOf, e2e.IsZero)
			},
		},
		{
			name: "etcd refused from the start",
			before: func(t *testing.T) (string, string, *tcpproxy.Proxy, *tcpproxy.Proxy) {
				return "http://" + deadAddr(t), kube.KubeconfigFile, nil, nil
			},
		},
		{
			name: "etcd black-holed from the start",
			before: func(t *testing.T) (string, string, *tcpproxy.Proxy, *tcpproxy.Proxy) {
				p := e2e.Proxied(t, strings.TrimPrefix(etcd.ClientURL, "http://"))
				p.BlackHole()
				return "http://" + p.Addr, kube.KubeconfigFile, p, nil
			},
		},
		{
			name: "kube-apiserver refused from the start",
			before: func(t *testing.T) (string, string, *tcpproxy.Proxy, *tcpproxy.Proxy) {
				return etcd.ClientURL, kubeconfigVia(t, kube, deadAddr(t)), nil, nil
			},
		},
		{
			name: "kube-apiserver black-holed from the start",
			before: func(t *testing.T) (string, string, *tcpproxy.Proxy, *tcpproxy.Proxy) {
				p := e2e.Proxied(t, strings.TrimPrefix(strings.TrimSuffix(kube.Config.Host, "/"), "https://"))
				p.BlackHole()
				return etcd.ClientURL, kubeconfigVia(t, kube, p.Addr), nil, p
			},
		},
		{
			name: "leading, then the kube-apiserver black-holed",
			before: func(t *testing.T) (string, string, *tcpproxy.Proxy, *tcpproxy.Proxy) {
				p := e2e.Proxied(t, strings.TrimPrefix(strings.TrimSuffix(kube.Config.Host, "/"), "https://"))
				return etcd.ClientURL, kubeconfigVia(t, kube, p.Addr), nil, p
			},
			then: func(t *testing.T, p *corednsproc.Process, _, kubeP *tcpproxy.Proxy) {
				p.WaitReady(t, 30*time.Second)
				kubeP.BlackHole()
			},
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			owner := []string{"stop-leading", "stop-standby", "stop-refused", "stop-hung", "stop-a", "stop-b", "stop-c", "stop-d", "stop-e"}[i]
			etcdP := e2e.Proxied(t, strings.TrimPrefix(etcd.ClientURL, "http://"))
			etcdURL, kubeconfig, kubeP := "http://"+etcdP.Addr, kube.KubeconfigFile, (*tcpproxy.Proxy)(nil)
			if tc.before != nil {
				var ep *tcpproxy.Proxy
				etcdURL, kubeconfig, ep, kubeP = tc.before(t)
				if ep != nil {
					etcdP = ep
				}
			}
			if owner == "stop-standby" {
				leader := corednsproc.Start(t, "leader.Corefile", e2e.BothRoles(etcd.ClientURL, owner, kube.KubeconfigFile))
				leader.WaitMetric(t, 30*time.Second, fmt.Sprintf(e2e.LeaderOf, owner), e2e.IsOne)
			}
			p := corednsproc.Start(t, "stop.Corefile", e2e.BothRoles(etcdURL, owner, kubeconfig, "ttl 60"))
			// Every series from the first second, before etcd or Kubernetes answered.
			for _, series := range []string{
				fmt.Sprintf(e2e.LeaderOf, owner),
				fmt.Sprintf(`coredns_gatewaydns_writer_failures_total{owner="%s"}`, owner),
				fmt.Sprintf(`coredns_gatewaydns_writer_etcd_reachable{owner="%s"}`, owner),
				`coredns_gatewaydns_etcd_errors_total{op="watch",zones="openmcp.cluster."}`,
				`coredns_gatewaydns_invalid_records_total{zones="openmcp.cluster."}`,
				e2e.ReachableOf,
			} {
				p.WaitExported(t, 10*time.Second, series)
			}
			if tc.then != nil {
				tc.then(t, p, etcdP, kubeP)
			}
			if owner == "stop-standby" {
				if v, _ := p.Metric(fmt.Sprintf(e2e.LeaderOf, owner)); v != 0 {
					t.Fatalf("the standby says it leads (%v)", v)
				}
			}
			reload, completed := p.ReloadNow(t, e2e.BothRoles(etcdURL, owner, kubeconfig, "ttl 61"), 20*time.Second)
			if !completed || reload > 5*time.Second {
				t.Errorf("a reload that changes the stanza: completed %v in %s, want completed within 5s", completed, reload)
			}
			took := p.Sigterm(t, limit)
			t.Logf("reload in %s, then SIGTERM -> exit in %s", reload.Round(time.Millisecond), took.Round(time.Millisecond))
		})
	}
}

// holdPort listens on a free loopback port (TCP and UDP) until the test ends: a Corefile that
// asks for it fails to start.
func holdPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	pc, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); pc.Close() })
	return port
}

// TestReloadDuringEtcdOutageKeepsAnswering: with etcd black-holed, a reload that leaves the
// stanza as it was, one that changes it, and one that fails all complete (or fail) within
// 5 s, while every question is answered from the last good records (a poll loop and dnsperf:
// no SERVFAIL) and /ready stays 200.
// When etcd answers again, the stanza catches up: a change made meanwhile is answered.
func TestReloadDuringEtcdOutageKeepsAnswering(t *testing.T) {
	cli, kube, etcdP, url := e2e.OutageLandscape(t)
	ctx := context.Background()
	p := corednsproc.Start(t, "reload.Corefile", e2e.BothRoles(url, "reloader", kube.KubeconfigFile))
	p.WaitReady(t, 30*time.Second)
	e2e.WaitFor(t, 10*time.Second, p.DNS, "hand.by.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("198.51.100.7"))

	etcdP.BlackHole()
	p.WaitMetric(t, 30*time.Second, e2e.ReachableOf, e2e.IsZero)
	answers := e2e.PollDNS(p.DNS, "hand.by.openmcp.cluster.", "198.51.100.7")
	ready := e2e.PollReady(p.Ready)
	// Long enough for the three reloads at their 5 s bound each.
	load := loadDuring(t, p.DNS, "hand.by.openmcp.cluster A\n", 16*time.Second)

	steps := []struct {
		name      string
		corefile  string
		completes bool
	}{
		{"the same stanza", e2e.BothRoles(url, "reloader", kube.KubeconfigFile) + "# a comment changes the hash\n", true},
		{"a changed stanza", e2e.BothRoles(url, "reloader", kube.KubeconfigFile, "min-lease-ttl 45"), true},
		{"a Corefile that fails to start", e2e.BothRoles(url, "reloader", kube.KubeconfigFile, "min-lease-ttl 46") +
			fmt.Sprintf("other.test:%d {\n    bind 127.0.0.1\n    whoami\n}\n", holdPort(t)), false},
	}
	for _, s := range steps {
		took, completed := p.ReloadNow(t, s.corefile, 20*time.Second)
		t.Logf("reload with %s during the outage: completed %v in %s", s.name, completed, took.Round(time.Millisecond))
		if completed != s.completes {
			t.Errorf("reload with %s: completed %v, want %v", s.name, completed, s.completes)
		}
		if took > 5*time.Second {
			t.Errorf("reload with %s took %s, want at most 5s", s.name, took)
		}
	}
	// The polls last as long as the load: reloads that take milliseconds leave them too few
	// questions to say anything otherwise.
	load.finish(t, "hand.by during the outage and its reloads")
	answers.Finish(t, "hand.by during the outage and its reloads")
	ready.Finish(t)

	if _, err := cli.Put(ctx, "/skydns/cluster/openmcp/by/later/1", `{"host":"198.51.100.8"}`); err != nil {
		t.Fatal(err)
	}
	etcdP.Restore()
	e2e.WaitFor(t, 15*time.Second, p.DNS, "later.by.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("198.51.100.8"))
}

// TestFailedReloadLeavesNothingBehind: after one good reload, a reload whose Corefile fails
// after the stanza started (a port already taken) stops what it started: goroutines go back to their level, etcd
// holds no more watches or leases than before, and the rejected configuration's writer never
// campaigns (no election key of its owner).
func TestFailedReloadLeavesNothingBehind(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	cli := etcd.Client(t)
	p := corednsproc.Prepare(t, "failed-reload.Corefile")
	withPProf := func(src string) string {
		return strings.Replace(src, "    ready\n", "    ready\n    pprof\n", 1)
	}
	good := withPProf(e2e.BothRoles(etcd.ClientURL, "kept", kube.KubeconfigFile))
	p.Start(t, good)
	p.WaitReady(t, 30*time.Second)
	p.WaitMetric(t, 30*time.Second, fmt.Sprintf(e2e.LeaderOf, "kept"), e2e.IsOne)
	// A successful SIGUSR1 reload first: it purges caddy's event hooks for good, so what
	// stops a failed instance's stanzas must not depend on them.
	if _, completed := p.ReloadNow(t, good+"# reloaded once\n", 20*time.Second); !completed {
		t.Fatal("the first, good reload did not complete")
	}
	p.WaitReady(t, 30*time.Second)

	goroutines := func() int { return p.Goroutines(t) }
	watchers := func() int {
		n, err := etcd.Watchers(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	leases := func() int {
		resp, err := cli.Leases(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return len(resp.Leases)
	}
	baseG, baseW, baseL := goroutines(), watchers(), leases()

	held := holdPort(t)
	for round := range 3 {
		bad := withPProf(e2e.BothRoles(etcd.ClientURL, "rejected", kube.KubeconfigFile)) +
			fmt.Sprintf("other.test:%d {\n    bind 127.0.0.1\n    whoami\n}\n", held)
		if took, completed := p.ReloadNow(t, bad, 20*time.Second); completed || took > 5*time.Second {
			t.Fatalf("round %d: the reload completed %v in %s, want a failure within 5s", round, completed, took)
		}
	}
	const slackG = 8 // in-flight queries and HTTP keep-alives, not a stanza's dozens
	endG := e2e.Settle(baseG+slackG, goroutines)
	endW := e2e.Settle(baseW, watchers)
	endL := e2e.Settle(baseL, leases)
	t.Logf("after 3 failed reloads: goroutines %d -> %d, etcd watchers %d -> %d, leases %d -> %d", baseG, endG, baseW, endW, baseL, endL)
	if endG > baseG+slackG {
		body, _ := p.PProfPage("goroutine?debug=1")
		t.Errorf("goroutines grew from %d to %d: the failed instances left theirs\n%s", baseG, endG, body)
	}
	if endW > baseW {
		t.Errorf("etcd watchers grew from %d to %d", baseW, endW)
	}
	if endL > baseL {
		t.Errorf("etcd leases grew from %d to %d", baseL, endL)
	}
	resp, err := cli.Get(context.Background(), "/gatewaydns/leader/rejected", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Errorf("the rejected configuration's writer holds %d election keys", resp.Count)
	}
	// The process goes on with the configuration it had.
	if v, _ := p.Metric(fmt.Sprintf(e2e.LeaderOf, "kept")); v != 1 {
		t.Errorf("the kept writer no longer leads (%v)", v)
	}
}
