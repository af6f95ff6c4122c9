package alerting

// Alert scenarios (issue 25): the real binary's processes live through an ordinary bad day
// (etcd gone for 30 s and for 3 minutes, a route churn whose controller takes its time, the
// central server killed, clashing keys written by hand, a cluster without the DNSEndpoint CRD)
// while a recorder scrapes them as Prometheus would; promtool then runs the shipped rules over
// what was recorded, and each scenario must fire exactly the alerts it should, nothing else.
//
// The scenarios run in parallel in this package, which go test runs beside the tests package:
// about five minutes of mostly idle processes.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// lead is how long each scenario records a healthy landscape before its trouble starts.
const lead = 20 * time.Second

// landscape is what the scenarios share: one kube-apiserver (each scenario its own namespaces
// and Gateway) and the series the rules read.
type landscape struct {
	kube   *testenv.Kube
	k8s    *gatewayfixture.Cluster
	wanted func(string) bool
}

func TestAlertScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("five minutes of scenarios")
	}
	testenv.ToolBinary(t, "promtool", "hack/build-promtool.sh") // skip early without it
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	names := metricNames(string(rules))
	kube := testenv.StartKubeAPIServer(t)
	l := &landscape{kube: kube, k8s: gatewayfixture.New(t, kube.Config), wanted: func(n string) bool { return names[n] }}
	t.Run("group", func(t *testing.T) {
		for _, sc := range []struct {
			name string
			run  func(*testing.T, *landscape)
		}{
			{"EtcdDownFor30s", func(t *testing.T, l *landscape) { etcdOutage(t, l, "short", 30*time.Second) }},
			{"EtcdDownFor3m", func(t *testing.T, l *landscape) { etcdOutage(t, l, "long", 3*time.Minute) }},
			{"RouteChurnWithASlowController", routeChurn},
			{"CentralServerKilled", centralKilled},
			{"ClashesWrittenByHand", clashesByHand},
			{"ClusterWithoutDNSEndpointCRD", func(t *testing.T, l *landscape) { withoutDNSEndpoints(t, l, false) }},
			{"ClusterWithoutDNSEndpointCRDNamed", func(t *testing.T, l *landscape) { withoutDNSEndpoints(t, l, true) }},
		} {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				sc.run(t, l)
			})
		}
	})
}

// cluster gives a scenario a namespace of its own with a programmed Gateway and one route.
func (l *landscape) cluster(t *testing.T, ns, addr string) {
	l.k8s.Namespace(ns)
	l.k8s.Gateway(ns, "gw", gatewayv1.HTTPProtocolType, 80, "", addr)
	l.k8s.SetGatewayProgrammed(ns, "gw", metav1.ConditionTrue)
	l.k8s.HTTPRoute(ns, "app", ns, "gw", "app."+ns+".openmcp.cluster")
}

func central(t *testing.T, etcdURL string) *corednsproc.Process {
	src, err := os.ReadFile("../../corefile.d/central.Corefile")
	if err != nil {
		t.Fatal(err)
	}
	p := corednsproc.Start(t, "central", string(src), "GATEWAYDNS_ETCD_ENDPOINTS="+etcdURL)
	p.WaitReady(t, 30*time.Second)
	return p
}

// writer starts a workload cluster's publish-only stanza for the namespace ns as owner ns.
func (l *landscape) writer(t *testing.T, name, etcdURL, ns string, extra ...string) *corednsproc.Process {
	opts := append([]string{"endpoint " + etcdURL, "owner " + ns, "kubeconfig " + l.kube.KubeconfigFile,
		"domain-filter openmcp.cluster", "namespaces " + ns, "publish-only"}, extra...)
	src := "openmcp.cluster {\n    errors\n    ready\n    prometheus :9153\n    gatewaydns {\n        " +
		strings.Join(opts, "\n        ") + "\n    }\n}\n"
	p := corednsproc.Start(t, name, src, "POD_NAME="+name)
	p.WaitReady(t, 60*time.Second)
	return p
}

// answered waits until server answers name with an address.
func answered(t *testing.T, server, name string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), dns.TypeA)
		r, err := dns.Exchange(m, server)
		if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no answer for %s within %v (last: %v %v)", server, name, within, r, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// until follows the scenario's schedule: it returns at the moment given.
func until(at time.Time) { time.Sleep(time.Until(at)) }

// gaugeBack waits until p exports series at 1 and returns how long that took.
func gaugeBack(t *testing.T, p *corednsproc.Process, series string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if body, err := p.Scrape(nil); err == nil && strings.Contains(body, series+" 1\n") {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("%s: %s not back to 1 within %v", p.Name, series, within)
	return within
}

// after is when an alert whose condition holds from `at` fires at the latest: 5 s for a
// process to tell (etcd_reachable falls after 4 s without an answer), a scrape, an evaluation
// to see it (pending), then its for (an evaluation falls exactly at its end).
func after(at time.Time, forDuration time.Duration) time.Time {
	return at.Add(5*time.Second + scrapeInterval + evaluationInterval + forDuration)
}

// etcdOutage stops the central etcd for d while a central server and a writer run on it. An
// outage of 90 s or more raises the two etcd alerts within 2 minutes of its start and clears
// them within a minute of its end; a shorter one raises nothing. The reachability gauges
// return within 2 s of etcd answering again.
func etcdOutage(t *testing.T, l *landscape, ns string, d time.Duration) {
	e := testenv.StartEtcd(t)
	l.cluster(t, ns, "203.0.113.10")
	c := central(t, e.ClientURL)
	w := l.writer(t, "writer-"+ns, e.ClientURL, ns)
	rec := newRecording(time.Second, l.wanted)
	rec.add("central", c)
	rec.add("writer", w)
	rec.start()
	answered(t, c.DNS, "app."+ns+".openmcp.cluster", 30*time.Second)

	until(rec.t0.Add(lead))
	down := time.Now()
	e.Kill()
	until(down.Add(d))
	e.Restart()
	up := time.Now()
	serveBack := gaugeBack(t, c, `coredns_gatewaydns_etcd_reachable{server="dns://:`+port(c.DNS)+`",zones="openmcp.cluster."}`, 10*time.Second)
	writerBack := gaugeBack(t, w, `coredns_gatewaydns_writer_etcd_reachable{owner="`+ns+`",server="dns://:`+port(w.DNS)+`"}`, 10*time.Second)
	t.Logf("etcd down for %v: reachable again on the server %v and on the writer %v after etcd answered",
		up.Sub(down).Round(time.Second), serveBack.Round(time.Millisecond), writerBack.Round(time.Millisecond))
	if serveBack > 2*time.Second || writerBack > 2*time.Second {
		t.Errorf("reachability returned after %v (server) and %v (writer), want within 2s of etcd answering", serveBack, writerBack)
	}
	until(up.Add(75 * time.Second))
	rec.finish()

	kill, back, end := rec.at(down), rec.at(up), rec.at(time.Now())
	var want expectation
	// Consequences an outage may make pending, never fire: the leader lost and found again,
	// the request errors counted over their 5 minutes.
	for _, a := range []string{"GatewayDNSWriterLeader", "GatewayDNSEtcdErrors"} {
		want = append(want, window{a, notFiring, kill, end})
	}
	for _, a := range []string{"GatewayDNSEtcdUnreachable", "GatewayDNSWriterEtcdUnreachable"} {
		if d < 90*time.Second {
			want = append(want, window{a, notFiring, kill, end})
			continue
		}
		// Fired within 2 minutes of the start (the for of 1m and two evaluations after the gauge
		// fell), until the end; cleared within a minute of it.
		by := rec.at(after(down, time.Minute))
		if by > kill+2*time.Minute {
			t.Fatalf("the schedule allows %v to fire, more than 2 minutes", by-kill)
		}
		want = append(want, window{a, anyState, kill, by}, window{a, firing, by, back}, window{a, anyState, back, back + time.Minute})
	}
	runPromtool(t, promtoolTests(t, t.Name(), rec, want))
}

func port(hostport string) string { return hostport[strings.LastIndexByte(hostport, ':')+1:] }

// routeChurn creates a route every 6 s (10 a minute) for two and a half minutes, which a gateway
// controller accepts after 0.5 to 2 s, and deletes the routes a minute old, under a leader and a
// standby of one owner: no Event, no rejection counted, no alert.
func routeChurn(t *testing.T, l *landscape) {
	const ns = "churn"
	e := testenv.StartEtcd(t)
	l.cluster(t, ns, "203.0.113.20")
	a := l.writer(t, "writer-churn-a", e.ClientURL, ns)
	b := l.writer(t, "writer-churn-b", e.ClientURL, ns)
	rec := newRecording(time.Second, l.wanted)
	rec.add("writer", a)
	rec.add("writer", b)
	rec.start()

	ctx := context.Background()
	const every, keep = 6 * time.Second, 10
	for i := 0; time.Since(rec.t0) < 150*time.Second; i++ {
		name := fmt.Sprintf("r%d", i)
		if err := l.k8s.TryPendingHTTPRoute(ctx, ns, name, ns, "gw", name+"."+ns+".openmcp.cluster"); err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(500*time.Millisecond+rand.N(1500*time.Millisecond), func() {
			if err := l.k8s.TryAcceptHTTPRoute(ctx, ns, name); err != nil {
				t.Errorf("accepting %s: %v", name, err)
			}
		})
		if i >= keep {
			l.k8s.DeleteHTTPRoute(ns, fmt.Sprintf("r%d", i-keep))
		}
		until(rec.t0.Add(time.Duration(i+1) * every))
	}
	until(time.Now().Add(15 * time.Second)) // past the last route's grace
	rec.finish()

	evs, err := l.k8s.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "type=Warning"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Items {
		t.Errorf("Warning Event on %s/%s: %s: %s", ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Message)
	}
	for _, p := range []*corednsproc.Process{a, b} {
		body, err := p.Scrape(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "coredns_gatewaydns_source_rejections_total{") && !strings.HasSuffix(line, " 0") {
				t.Errorf("%s counted a rejection: %s", p.Name, line)
			}
		}
	}
	runPromtool(t, promtoolTests(t, t.Name(), rec, nil))
}

// centralKilled kills the central server (one replica) while a workload cluster's CoreDNS
// forwards the zone to it and answers questions every 200 ms: the instance down, the zone
// served by nobody, and the forwarder's failing health checks.
func centralKilled(t *testing.T, l *landscape) {
	e := testenv.StartEtcd(t)
	c := central(t, e.ClientURL)
	fwd := corednsproc.Start(t, "forwarder", "openmcp.cluster {\n    errors\n    ready\n    prometheus :9153\n    forward . "+c.DNS+" {\n        health_check 500ms\n    }\n}\n")
	fwd.WaitReady(t, 30*time.Second)
	rec := newRecording(time.Second, l.wanted)
	rec.add("central", c)
	rec.add("workload", fwd)
	rec.start()
	stop := make(chan struct{})
	defer close(stop)
	go func() { // the cluster's workloads asking
		cl := &dns.Client{Timeout: 500 * time.Millisecond}
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			m := new(dns.Msg)
			m.SetQuestion("app.openmcp.cluster.", dns.TypeA)
			_, _, _ = cl.Exchange(m, fwd.DNS)
		}
	}()

	until(rec.t0.Add(lead))
	killed := time.Now()
	c.Kill()
	down := after(killed, time.Minute)
	unhealthy := after(killed, 2*time.Minute)
	until(unhealthy.Add(evaluationInterval + 5*time.Second))
	rec.finish()

	k, end := rec.at(killed), rec.at(time.Now())
	want := expectation{
		{"GatewayDNSInstanceDown", anyState, k, rec.at(down)}, {"GatewayDNSInstanceDown", firing, rec.at(down), end},
		{"GatewayDNSServeDown", anyState, k, rec.at(down)}, {"GatewayDNSServeDown", firing, rec.at(down), end},
		{"GatewayDNSForwardUnhealthy", anyState, k, rec.at(unhealthy)}, {"GatewayDNSForwardUnhealthy", firing, rec.at(unhealthy), end},
		// The only gatewaydns process is gone: pending, it would fire after its 5 minutes.
		{"GatewayDNSAbsent", notFiring, k, end},
	}
	runPromtool(t, promtoolTests(t, t.Name(), rec, want))
}

// clashesByHand writes, beside the writers' records, keys by hand: two names of their own
// under eu1 (web.eu1 an address, api.eu1 a CNAME), which are no clash of eu1's, and one name
// whose own records mix a CNAME with an address, which is. The gauge counts only the last;
// its alert (15 minutes) may be pending, and nothing else is.
func clashesByHand(t *testing.T, l *landscape) {
	e := testenv.StartEtcd(t)
	c := central(t, e.ClientURL)
	rec := newRecording(time.Second, l.wanted)
	rec.add("central", c)
	rec.start()
	cli := e.Client(t)
	ctx := context.Background()
	for key, value := range map[string]string{
		"/skydns/cluster/openmcp/eu1/web":           `{"host":"10.0.0.1"}`,
		"/skydns/cluster/openmcp/eu1/api":           `{"host":"lb.example.net"}`,
		"/skydns/cluster/openmcp/eu1/shop/1a2b3c4d": `{"host":"10.0.0.2"}`,
		"/skydns/cluster/openmcp/eu1/shop/5e6f7a8b": `{"host":"shop.example.net"}`,
	} {
		if _, err := cli.Put(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	answered(t, c.DNS, "web.eu1.openmcp.cluster", 10*time.Second)
	until(rec.t0.Add(95 * time.Second))
	rec.finish()

	series := `coredns_gatewaydns_cname_clashes{instance="` + c.Metrics + `",job="central",server="dns://:` + port(c.DNS) + `",zones="openmcp.cluster."}`
	rec.mu.Lock()
	cells := rec.series[series]
	rec.mu.Unlock()
	if len(cells) == 0 || cells[len(cells)-1].v != 1 {
		t.Errorf("%s at the end: %v, want 1 (shop.eu1 only)", series, cells[len(cells)-1:])
	}
	runPromtool(t, promtoolTests(t, t.Name(), rec, expectation{{"GatewayDNSCNAMEClash", notFiring, 0, time.Hour}}))
}

// withoutDNSEndpoints runs a writer on a cluster without the DNSEndpoint CRD: read by default,
// the missing kind raises nothing; named in sources, GatewayDNSKindNotServed is pending (15
// minutes before it fires).
func withoutDNSEndpoints(t *testing.T, l *landscape, named bool) {
	ns, extra := "nocrd", []string(nil)
	if named {
		ns, extra = "nocrdnamed", []string{"sources gateway-httproute crd"}
	}
	e := testenv.StartEtcd(t)
	l.cluster(t, ns, "203.0.113.30")
	w := l.writer(t, "writer-"+ns, e.ClientURL, ns, extra...)
	rec := newRecording(time.Second, l.wanted)
	rec.add("writer", w)
	rec.start()
	until(rec.t0.Add(95 * time.Second))
	rec.finish()
	body, err := w.Scrape(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The CRD is missing either way; only the named kind is worth an alert.
	labels := `{kind="DNSEndpoint",owner="` + ns + `",server="dns://:` + port(w.DNS) + `"}`
	for series, want := range map[string]bool{
		"coredns_gatewaydns_source_kind_served" + labels + " 0": named,
		"coredns_gatewaydns_source_kind_named" + labels + " 1":  named,
		"coredns_gatewaydns_source_kind_named" + labels + " 0":  false,
	} {
		if got := strings.Contains(body, series); got != want {
			t.Errorf("%s exported: %v, want %v", series, got, want)
		}
	}
	var want expectation
	if named {
		want = expectation{{"GatewayDNSKindNotServed", notFiring, 0, time.Hour}}
	}
	runPromtool(t, promtoolTests(t, t.Name(), rec, want))
}
