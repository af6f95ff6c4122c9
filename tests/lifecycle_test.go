package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/promtext"
	"github.com/gatewaydns/gatewaydns/internal/tcpproxy"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// Lifecycle tests: stop and reload are bounded, and keep answering, whatever state etcd and
// the kube-apiserver are in. "Black-holed" is a peer that accepts connections and never
// answers (tcpproxy.BlackHole): every request waits, which a refused connection never shows.

// bothRoles is a stanza that serves openmcp.cluster from etcdURL and publishes the cluster's
// names as owner, with the ready, metrics and pprof listeners the tests read.
func bothRoles(etcdURL, owner, kubeconfig string, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "openmcp.cluster {\n    ready\n    prometheus :9153\n    gatewaydns {\n")
	fmt.Fprintf(&b, "        endpoint %s\n        owner %s\n        kubeconfig %s\n        domain-filter eu1.openmcp.cluster\n",
		etcdURL, owner, kubeconfig)
	for _, l := range extra {
		fmt.Fprintf(&b, "        %s\n", l)
	}
	b.WriteString("    }\n}\n")
	return b.String()
}

// proxied returns a proxy to target that the test closes at its end.
func proxied(t *testing.T, target string) *tcpproxy.Proxy {
	t.Helper()
	p, err := tcpproxy.Start(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

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
func deadAddr(t *testing.T) string { return fmt.Sprintf("127.0.0.1:%d", freePort(t)) }

// exportsSeries reports whether /metrics has a series named by series (see matching).
func (p *coreDNSProcess) exportsSeries(series string) bool {
	body, code := httpGet("http://" + p.Metrics + "/metrics")
	return code == 200 && len(promtext.Matching(body, series)) > 0
}

// waitExported waits until /metrics exports series: the process is up and its stanza started.
func (p *coreDNSProcess) waitExported(t *testing.T, timeout time.Duration, series string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !p.exportsSeries(series) {
		if time.Now().After(deadline) {
			body, _ := httpGet("http://" + p.Metrics + "/metrics")
			t.Fatalf("%s not exported within %s:\n%s", series, timeout, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sigterm stops the process as Kubernetes does and returns how long it took to exit.
func (p *coreDNSProcess) sigterm(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		return time.Since(start)
	case <-time.After(limit):
		_ = p.cmd.Process.Signal(syscall.SIGQUIT) // the goroutine dump shows what it waits on
		<-p.done
		t.Errorf("did not exit within %s of SIGTERM:\n%s", limit, lastLines(p.log.String(), 400))
		return limit
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

const (
	leaderOf    = `coredns_gatewaydns_writer_leader{owner="%s"}`
	reachableOf = `coredns_gatewaydns_etcd_reachable{zones="openmcp.cluster."}`
)

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
		then func(t *testing.T, p *coreDNSProcess, etcdP, kubeP *tcpproxy.Proxy)
	}{
		{
			name: "leading, everything answers",
			then: func(t *testing.T, p *coreDNSProcess, _, _ *tcpproxy.Proxy) {
				p.waitMetric(t, 30*time.Second, fmt.Sprintf(leaderOf, "stop-leading"), isOne)
			},
		},
		{
			name: "campaigning behind another replica",
			then: func(t *testing.T, p *coreDNSProcess, _, _ *tcpproxy.Proxy) {
				p.waitReady(t, 30*time.Second)
			},
		},
		{
			name: "leading, then etcd refuses",
			then: func(t *testing.T, p *coreDNSProcess, etcdP, _ *tcpproxy.Proxy) {
				p.waitMetric(t, 30*time.Second, fmt.Sprintf(leaderOf, "stop-refused"), isOne)
				etcdP.Cut()
				p.waitMetric(t, 30*time.Second, reachableOf, isZero)
			},
		},
		{
			name: "leading, then etcd black-holed",
			then: func(t *testing.T, p *coreDNSProcess, etcdP, _ *tcpproxy.Proxy) {
				p.waitMetric(t, 30*time.Second, fmt.Sprintf(leaderOf, "stop-hung"), isOne)
				etcdP.BlackHole()
				p.waitMetric(t, 30*time.Second, reachableOf, isZero)
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
				p := proxied(t, strings.TrimPrefix(etcd.ClientURL, "http://"))
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
				p := proxied(t, strings.TrimPrefix(strings.TrimSuffix(kube.Config.Host, "/"), "https://"))
				p.BlackHole()
				return etcd.ClientURL, kubeconfigVia(t, kube, p.Addr), nil, p
			},
		},
		{
			name: "leading, then the kube-apiserver black-holed",
			before: func(t *testing.T) (string, string, *tcpproxy.Proxy, *tcpproxy.Proxy) {
				p := proxied(t, strings.TrimPrefix(strings.TrimSuffix(kube.Config.Host, "/"), "https://"))
				return etcd.ClientURL, kubeconfigVia(t, kube, p.Addr), nil, p
			},
			then: func(t *testing.T, p *coreDNSProcess, _, kubeP *tcpproxy.Proxy) {
				p.waitReady(t, 30*time.Second)
				kubeP.BlackHole()
			},
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			owner := []string{"stop-leading", "stop-standby", "stop-refused", "stop-hung", "stop-a", "stop-b", "stop-c", "stop-d", "stop-e"}[i]
			etcdP := proxied(t, strings.TrimPrefix(etcd.ClientURL, "http://"))
			etcdURL, kubeconfig, kubeP := "http://"+etcdP.Addr, kube.KubeconfigFile, (*tcpproxy.Proxy)(nil)
			if tc.before != nil {
				var ep *tcpproxy.Proxy
				etcdURL, kubeconfig, ep, kubeP = tc.before(t)
				if ep != nil {
					etcdP = ep
				}
			}
			if owner == "stop-standby" {
				leader := startCorefile(t, "leader.Corefile", bothRoles(etcd.ClientURL, owner, kube.KubeconfigFile))
				leader.waitMetric(t, 30*time.Second, fmt.Sprintf(leaderOf, owner), isOne)
			}
			p := startCorefile(t, "stop.Corefile", bothRoles(etcdURL, owner, kubeconfig, "ttl 60"))
			// Every series from the first second, before etcd or Kubernetes answered.
			for _, series := range []string{
				fmt.Sprintf(leaderOf, owner),
				fmt.Sprintf(`coredns_gatewaydns_writer_failures_total{owner="%s"}`, owner),
				fmt.Sprintf(`coredns_gatewaydns_writer_etcd_reachable{owner="%s"}`, owner),
				`coredns_gatewaydns_etcd_errors_total{op="watch",zones="openmcp.cluster."}`,
				`coredns_gatewaydns_invalid_records_total{zones="openmcp.cluster."}`,
				reachableOf,
			} {
				p.waitExported(t, 10*time.Second, series)
			}
			if tc.then != nil {
				tc.then(t, p, etcdP, kubeP)
			}
			if owner == "stop-standby" {
				if v, _ := p.metric(fmt.Sprintf(leaderOf, owner)); v != 0 {
					t.Fatalf("the standby says it leads (%v)", v)
				}
			}
			reload, completed := p.reloadNow(t, bothRoles(etcdURL, owner, kubeconfig, "ttl 61"), 20*time.Second)
			if !completed || reload > 5*time.Second {
				t.Errorf("a reload that changes the stanza: completed %v in %s, want completed within 5s", completed, reload)
			}
			took := p.sigterm(t, limit)
			t.Logf("reload in %s, then SIGTERM -> exit in %s", reload.Round(time.Millisecond), took.Round(time.Millisecond))
		})
	}
}

func isOne(v float64) bool  { return v == 1 }
func isZero(v float64) bool { return v == 0 }

// reloadNow makes the process read its Corefile (rewritten to src) again, as the reload
// plugin does, through SIGUSR1, and waits until the log says the reload completed or failed.
// It returns how long that took and whether it completed.
func (p *coreDNSProcess) reloadNow(t *testing.T, src string, limit time.Duration) (time.Duration, bool) {
	t.Helper()
	if err := os.WriteFile(p.conf, []byte(p.localize(src)), 0o644); err != nil {
		t.Fatal(err)
	}
	log := p.log.String()
	completed, failed := strings.Count(log, "Reloading complete"), strings.Count(log, "Restart failed")
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	for time.Since(start) < limit {
		log = p.log.String()
		if strings.Count(log, "Reloading complete") > completed {
			return time.Since(start), true
		}
		if strings.Count(log, "Restart failed") > failed {
			return time.Since(start), false
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("reload neither completed nor failed within %s:\n%s", limit, lastLines(p.log.String(), 60))
	return 0, false
}

// readyPoller asks /ready every few milliseconds and remembers every answer that was not 200.
type readyPoller struct {
	stop, done  chan struct{}
	mu          sync.Mutex
	asked       int
	unreachable int
	bad         []string
}

func pollReady(addr string) *readyPoller {
	r := &readyPoller{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			resp, err := http.Get("http://" + addr + "/ready") // #nosec G107 -- loopback test URL
			r.mu.Lock()
			r.asked++
			switch {
			case err != nil:
				// The ready plugin closes its listener when a reload starts and opens it again
				// in the new instance (stock CoreDNS, whatever the plugins): a probe in between
				// fails to connect. Not an answer of gatewaydns's readiness; counted apart.
				r.unreachable++
			case resp.StatusCode != 200:
				// The ready plugin's body names the plugins that are not ready.
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
				r.bad = append(r.bad, fmt.Sprintf("%s: HTTP %d %q", time.Now().Format("15:04:05.000"), resp.StatusCode, body))
			}
			if err == nil {
				resp.Body.Close()
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *readyPoller) finish(t *testing.T) {
	t.Helper()
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bad) > 0 {
		t.Errorf("/ready was not 200 %d of %d times: %v", len(r.bad), r.asked, r.bad[:min(len(r.bad), 10)])
	}
	t.Logf("/ready: %d polls, %d not 200, %d not connected (the ready plugin's listener moving to the new instance)", r.asked, len(r.bad), r.unreachable)
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

// outageLandscape starts an etcd that holds hand.by.openmcp.cluster (198.51.100.7), a proxy to
// it that a test cuts or black-holes, and a kube-apiserver; it returns a direct client of the
// etcd, the API server, the proxy and the etcd URL through the proxy.
func outageLandscape(t *testing.T) (*clientv3.Client, *testenv.Kube, *tcpproxy.Proxy, string) {
	t.Helper()
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	cli := etcd.Client(t)
	if _, err := cli.Put(context.Background(), "/skydns/cluster/openmcp/by/hand/1", `{"host":"198.51.100.7"}`); err != nil {
		t.Fatal(err)
	}
	etcdP := proxied(t, strings.TrimPrefix(etcd.ClientURL, "http://"))
	return cli, kube, etcdP, "http://" + etcdP.Addr
}

// goroutinesAt reads the process's goroutine count from the pprof plugin's listener at addr.
func goroutinesAt(t *testing.T, addr string) func() int {
	return func() int {
		t.Helper()
		body, code := httpGet("http://" + addr + "/debug/pprof/goroutine?debug=1")
		first, _, _ := strings.Cut(body, "\n")
		var n int
		if _, err := fmt.Sscanf(first, "goroutine profile: total %d", &n); code != 200 || err != nil {
			t.Fatalf("goroutine profile: HTTP %d %q", code, first)
		}
		return n
	}
}

// TestReloadDuringEtcdOutageKeepsAnswering: with etcd black-holed, a reload that leaves the
// stanza as it was, one that changes it, and one that fails all complete (or fail) within
// 5 s, while every question is answered from the last good records (a poll loop and dnsperf:
// no SERVFAIL) and /ready stays 200.
// When etcd answers again, the stanza catches up: a change made meanwhile is answered.
func TestReloadDuringEtcdOutageKeepsAnswering(t *testing.T) {
	cli, kube, etcdP, url := outageLandscape(t)
	ctx := context.Background()
	p := startCorefile(t, "reload.Corefile", bothRoles(url, "reloader", kube.KubeconfigFile))
	p.waitReady(t, 30*time.Second)
	waitFor(t, 10*time.Second, p.DNS, "hand.by.openmcp.cluster.", dns.TypeA, answersWith("198.51.100.7"))

	etcdP.BlackHole()
	p.waitMetric(t, 30*time.Second, reachableOf, isZero)
	answers := pollDNS(p.DNS, "hand.by.openmcp.cluster.", "198.51.100.7")
	ready := pollReady(p.Ready)
	// Long enough for the three reloads at their 5 s bound each.
	load := loadDuring(t, p.DNS, "hand.by.openmcp.cluster A\n", 16*time.Second)

	steps := []struct {
		name      string
		corefile  string
		completes bool
	}{
		{"the same stanza", bothRoles(url, "reloader", kube.KubeconfigFile) + "# a comment changes the hash\n", true},
		{"a changed stanza", bothRoles(url, "reloader", kube.KubeconfigFile, "min-lease-ttl 45"), true},
		{"a Corefile that fails to start", bothRoles(url, "reloader", kube.KubeconfigFile, "min-lease-ttl 46") +
			fmt.Sprintf("other.test:%d {\n    bind 127.0.0.1\n    whoami\n}\n", holdPort(t)), false},
	}
	for _, s := range steps {
		took, completed := p.reloadNow(t, s.corefile, 20*time.Second)
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
	answers.finish(t, "hand.by during the outage and its reloads")
	ready.finish(t)

	if _, err := cli.Put(ctx, "/skydns/cluster/openmcp/by/later/1", `{"host":"198.51.100.8"}`); err != nil {
		t.Fatal(err)
	}
	etcdP.Restore()
	waitFor(t, 15*time.Second, p.DNS, "later.by.openmcp.cluster.", dns.TypeA, answersWith("198.51.100.8"))
}

// TestFailedReloadLeavesNothingBehind: after one good reload, a reload whose Corefile fails
// after the stanza started (a port already taken) stops what it started: goroutines go back to their level, etcd
// holds no more watches or leases than before, and the rejected configuration's writer never
// campaigns (no election key of its owner).
func TestFailedReloadLeavesNothingBehind(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	cli := etcd.Client(t)
	p := newCoreDNSProcess(t)
	pprof := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	withPProf := func(src string) string {
		return strings.Replace(src, "    ready\n", "    ready\n    pprof "+pprof+"\n", 1)
	}
	good := withPProf(bothRoles(etcd.ClientURL, "kept", kube.KubeconfigFile))
	startProcess(t, p, "failed-reload.Corefile", good)
	p.waitReady(t, 30*time.Second)
	p.waitMetric(t, 30*time.Second, fmt.Sprintf(leaderOf, "kept"), isOne)
	// A successful SIGUSR1 reload first: it purges caddy's event hooks for good, so what
	// stops a failed instance's stanzas must not depend on them.
	if _, completed := p.reloadNow(t, good+"# reloaded once\n", 20*time.Second); !completed {
		t.Fatal("the first, good reload did not complete")
	}
	p.waitReady(t, 30*time.Second)

	goroutines := goroutinesAt(t, pprof)
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
		bad := withPProf(bothRoles(etcd.ClientURL, "rejected", kube.KubeconfigFile)) +
			fmt.Sprintf("other.test:%d {\n    bind 127.0.0.1\n    whoami\n}\n", held)
		if took, completed := p.reloadNow(t, bad, 20*time.Second); completed || took > 5*time.Second {
			t.Fatalf("round %d: the reload completed %v in %s, want a failure within 5s", round, completed, took)
		}
	}
	const slackG = 8 // in-flight queries and HTTP keep-alives, not a stanza's dozens
	endG := settle(baseG+slackG, goroutines)
	endW := settle(baseW, watchers)
	endL := settle(baseL, leases)
	t.Logf("after 3 failed reloads: goroutines %d -> %d, etcd watchers %d -> %d, leases %d -> %d", baseG, endG, baseW, endW, baseL, endL)
	if endG > baseG+slackG {
		body, _ := httpGet("http://" + pprof + "/debug/pprof/goroutine?debug=1")
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
	if v, _ := p.metric(fmt.Sprintf(leaderOf, "kept")); v != 1 {
		t.Errorf("the kept writer no longer leads (%v)", v)
	}
}
