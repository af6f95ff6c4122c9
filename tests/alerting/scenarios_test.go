package alerting

// Alert scenarios (issues 25 and 41): the real binary's processes live through an ordinary bad
// day (two etcd outages, a route churn whose controller takes its time, the central server
// killed under a workload cluster that forwards to it, a central server that never reaches
// etcd, clashing keys written by hand beside a replica whose watch stopped without a word, a
// cluster without the DNSEndpoint CRD) while a recorder scrapes them as Prometheus would;
// promtool then runs the shipped rules over what was recorded, and each scenario must fire
// exactly the alerts it should, nothing else.
//
// The central server listens on two addresses, as the shipped one does (the zone on :53 and on
// :5353, where the workload clusters' forwarders reach it through the Service gatewaydns).
//
// The scenarios run in parallel in this package, which go test runs beside the tests package:
// about six and a half minutes of mostly idle processes, the two etcd outages the longest.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/dashboard"
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
		t.Skip("six minutes of scenarios")
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
			{"EtcdDownFor30sThenFor140s2mApart", etcdOutages},
			{"RouteChurnWithASlowController", routeChurn},
			{"CentralServerKilledUnderAWorkload", centralKilled},
			{"CentralServerWithoutEtcd", centralWithoutEtcd},
			{"ClashesWrittenByHandBesideAStaleReplica", clashesByHand},
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

// centralServer is a central server's process with the addresses of its two listeners: DNS,
// and Zone, the zone-only one that the workload clusters' forwarders reach.
type centralServer struct {
	*corednsproc.Process
	DNS, Zone string // host:port
}

// server is the server label of the central block's series: both addresses, sorted and
// joined, as the plugin labels a block on several addresses.
func (c centralServer) server() string {
	addrs := []string{"dns://:" + port(c.DNS), "dns://:" + port(c.Zone)}
	slices.Sort(addrs)
	return strings.Join(addrs, " ")
}

// central starts corefile.d/central.Corefile on two addresses, as the overlays' and the chart's
// central Corefile serves the zone (openmcp.cluster:53 openmcp.cluster:5353), and waits until
// it is ready unless ready is false (a server that never loads). Given replicaOf, it listens on
// that server's ports, as a pod of the same Deployment does on its own address: CoreDNS binds
// them with SO_REUSEPORT, the kernel shares the questions between the two, and both label their
// series with the same server.
func central(t *testing.T, name, etcdURL string, ready bool, replicaOf ...centralServer) centralServer {
	src, err := os.ReadFile("../../corefile.d/central.Corefile")
	if err != nil {
		t.Fatal(err)
	}
	c := centralServer{}
	if len(replicaOf) > 0 {
		c.DNS, c.Zone = replicaOf[0].DNS, replicaOf[0].Zone
	} else {
		ports := corednsproc.Ports(t, 2)
		c.DNS, c.Zone = fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	}
	// The query log of every probe would drown the test's log.
	corefile := strings.Replace(string(src), "    log\n", "", 1)
	corefile = strings.Replace(corefile, "openmcp.cluster {", fmt.Sprintf("openmcp.cluster:%s openmcp.cluster:%s {", port(c.DNS), port(c.Zone)), 1)
	c.Process = corednsproc.Start(t, name, corefile, "GATEWAYDNS_ETCD_ENDPOINTS="+etcdURL)
	if ready {
		c.WaitReady(t, 30*time.Second)
	}
	return c
}

// writer starts a workload cluster's publish-only stanza for the namespace ns as owner ns.
func (l *landscape) writer(t *testing.T, name, etcdURL, ns string, extra ...string) *corednsproc.Process {
	return l.workload(t, name, etcdURL, ns, "", extra...)
}

// workload starts a workload cluster's zone block as the overlays and the chart ship it: the
// publish-only stanza for the namespace ns as owner ns, and the zone forwarded to the central
// server at forward ("": none).
func (l *landscape) workload(t *testing.T, name, etcdURL, ns, forward string, extra ...string) *corednsproc.Process {
	opts := append([]string{"endpoint " + etcdURL, "owner " + ns, "kubeconfig " + l.kube.KubeconfigFile,
		"domain-filter openmcp.cluster", "namespaces " + ns, "publish-only"}, extra...)
	src := "openmcp.cluster {\n    errors\n    ready\n    prometheus :9153\n    gatewaydns {\n        " +
		strings.Join(opts, "\n        ") + "\n    }\n"
	if forward != "" {
		src += "    forward . " + forward + "\n"
	}
	p := corednsproc.Start(t, name, src+"}\n", "POD_NAME="+name)
	p.WaitReady(t, 60*time.Second)
	return p
}

// asking asks each server for name every 200 ms, as a cluster's workloads would, until the
// test ends.
func asking(t *testing.T, name string, servers ...string) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		cl := &dns.Client{Timeout: 500 * time.Millisecond}
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			for _, s := range servers {
				m := new(dns.Msg)
				m.SetQuestion(dns.Fqdn(name), dns.TypeA)
				_, _, _ = cl.Exchange(m, s)
			}
		}
	}()
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

// gaugeBack waits until p exports the metric's series of the server block at 1 and returns
// how long that took.
func gaugeBack(t *testing.T, p *corednsproc.Process, metric, server string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if body, err := p.Scrape(nil); err == nil && exported(body, metric, server, " 1") {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("%s: %s of %s not back to 1 within %v", p.Name, metric, server, within)
	return within
}

// exported says whether body holds a series of metric whose server label is server, ending
// with suffix (its value).
func exported(body, metric, server, suffix string) bool {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, metric+"{") && strings.Contains(line, `server="`+server+`"`) && strings.HasSuffix(line, suffix) {
			return true
		}
	}
	return false
}

// after is when an alert whose condition holds from `at` fires at the latest: 5 s for a
// process to tell (etcd_reachable falls after 4 s without an answer), a scrape, an evaluation
// to see it (pending), then its for (an evaluation falls exactly at its end).
func after(at time.Time, forDuration time.Duration) time.Time {
	return at.Add(5*time.Second + scrapeInterval + evaluationInterval + forDuration)
}

// etcdOutages stops the central etcd twice, 2 minutes apart, while a central server and a
// writer run on it: for 30 s, which raises nothing, and for 140 s, which raises the two etcd
// alerts within 2 minutes of its start and clears them within a minute of its end. The
// reachability gauges return within 2 s of etcd answering again. The errors every retry counts
// during an outage are the outage's: GatewayDNSEtcdErrors may be pending while it lasts, and is
// gone once it ends (it bridged two outages and fired minutes after the second one ended).
func etcdOutages(t *testing.T, l *landscape) {
	const ns = "outages"
	e := testenv.StartEtcd(t)
	l.cluster(t, ns, "203.0.113.10")
	c := central(t, "central", e.ClientURL, true)
	w := l.writer(t, "writer-"+ns, e.ClientURL, ns)
	rec := newRecording(time.Second, l.wanted)
	rec.add("central", c.Process)
	rec.add("writer", w)
	rec.start()
	answered(t, c.DNS, "app."+ns+".openmcp.cluster", 30*time.Second)

	outage := func(d time.Duration) (down, up time.Time) {
		down = time.Now()
		e.Kill()
		until(down.Add(d))
		e.Restart()
		up = time.Now()
		serveBack := gaugeBack(t, c.Process, "coredns_gatewaydns_etcd_reachable", c.server(), 10*time.Second)
		writerBack := gaugeBack(t, w, "coredns_gatewaydns_writer_etcd_reachable", "dns://:"+port(w.DNS), 10*time.Second)
		t.Logf("etcd down for %v: reachable again on the server %v and on the writer %v after etcd answered",
			up.Sub(down).Round(time.Second), serveBack.Round(time.Millisecond), writerBack.Round(time.Millisecond))
		if serveBack > 2*time.Second || writerBack > 2*time.Second {
			t.Errorf("reachability returned after %v (server) and %v (writer), want within 2s of etcd answering", serveBack, writerBack)
		}
		return down, up
	}
	until(rec.t0.Add(lead))
	down1, up1 := outage(30 * time.Second)
	until(up1.Add(2 * time.Minute))
	down2, up2 := outage(140 * time.Second)
	until(up2.Add(65 * time.Second))
	rec.finish()

	kill1, back1, kill2, back2, end := rec.at(down1), rec.at(up1), rec.at(down2), rec.at(up2), rec.at(time.Now())
	// Fired within 2 minutes of the start (the for of 1m and two evaluations after the gauge
	// fell), until the end; cleared within a minute of it.
	by := rec.at(after(down2, time.Minute))
	if by > kill2+2*time.Minute || by+evaluationInterval > back2 {
		t.Fatalf("the schedule allows %v to fire, more than 2 minutes, or leaves no evaluation before the end", by-kill2)
	}
	want := expectation{
		// A leader lost and found again may be pending, never fire.
		{"GatewayDNSWriterLeader", notFiring, kill1, end},
		// The errors the outages' retries count: pending at most while etcd is down (before the
		// gauge falls), nothing once it answers.
		{"GatewayDNSEtcdErrors", notFiring, kill1, back1}, {"GatewayDNSEtcdErrors", notFiring, kill2, back2},
	}
	for _, a := range []string{"GatewayDNSEtcdUnreachable", "GatewayDNSWriterEtcdUnreachable"} {
		want = append(want, window{a, notFiring, kill1, back1 + time.Minute},
			window{a, anyState, kill2, by}, window{a, firing, by, back2}, window{a, anyState, back2, back2 + time.Minute})
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

// centralKilled kills the central server (one replica) while a workload cluster's zone block
// (publishing, and forwarding the zone to the central server's zone address, as the Service
// gatewaydns does) answers questions every 200 ms: the instance down, the zone served by
// nobody, the workload's forwarded questions SERVFAIL within 3 minutes, its forward's failing
// health checks.
func centralKilled(t *testing.T, l *landscape) {
	const ns = "killed"
	e := testenv.StartEtcd(t)
	l.cluster(t, ns, "203.0.113.40")
	c := central(t, "central", e.ClientURL, true)
	wl := l.workload(t, "workload-"+ns, e.ClientURL, ns, c.Zone)
	name := "app." + ns + ".openmcp.cluster"
	answered(t, wl.DNS, name, 30*time.Second)
	rec := newRecording(time.Second, l.wanted)
	rec.add("central", c.Process)
	rec.add("workload", wl)
	rec.start()
	asking(t, name, wl.DNS) // the cluster's workloads

	until(rec.t0.Add(lead))
	killed := time.Now()
	c.Kill()
	down := after(killed, time.Minute)
	unhealthy := after(killed, 2*time.Minute)
	if unhealthy.Sub(killed) > 3*time.Minute {
		t.Fatalf("the schedule allows the workload's SERVFAILs %v to fire, more than 3 minutes", unhealthy.Sub(killed))
	}
	until(unhealthy.Add(evaluationInterval + 5*time.Second))
	rec.finish()

	k, end := rec.at(killed), rec.at(time.Now())
	want := expectation{
		{"GatewayDNSInstanceDown", anyState, k, rec.at(down)}, {"GatewayDNSInstanceDown", firing, rec.at(down), end},
		{"GatewayDNSServeDown", anyState, k, rec.at(down)}, {"GatewayDNSServeDown", firing, rec.at(down), end},
		// The workload's block: its answers for the zone, and its forward.
		{"GatewayDNSServfails", anyState, k, rec.at(unhealthy)}, {"GatewayDNSServfails", firing, rec.at(unhealthy), end},
		{"GatewayDNSForwardUnhealthy", anyState, k, rec.at(unhealthy)}, {"GatewayDNSForwardUnhealthy", firing, rec.at(unhealthy), end},
		{"GatewayDNSForwardBroken", anyState, k, rec.at(unhealthy)}, {"GatewayDNSForwardBroken", firing, rec.at(unhealthy), end},
	}
	// The SERVFAILs are the workload's, named: its replica, its address, the zone.
	last := end - end%evaluationInterval
	servfails := fmt.Sprintf(`{alertname="GatewayDNSServfails",instance=%q,job="workload",server="dns://:%s",zone="openmcp.cluster."}`, wl.Metrics, port(wl.DNS))
	runPromtool(t, withChecks(promtoolTests(t, t.Name(), rec, want), check{
		expr: `group by (alertname, job, instance, server, zone) (ALERTS{alertname="GatewayDNSServfails", alertstate="firing"})`,
		at:   last, samples: map[string]float64{servfails: 1},
	}))
}

// centralWithoutEtcd starts a central server whose etcd never answers, and asks it on both its
// addresses every 200 ms: it answers SERVFAIL to everything (it never loaded the zone), which
// GatewayDNSServfails says for each address although the block's series carry both, and the
// dashboard's SERVFAIL share shows at 100% for each; etcd unreachable fires, and the errors
// of its retries are the outage's (GatewayDNSEtcdErrors stays quiet).
func centralWithoutEtcd(t *testing.T, l *landscape) {
	c := central(t, "central", fmt.Sprintf("http://127.0.0.1:%d", corednsproc.FreePort(t)), false)
	rec := newRecording(time.Second, l.wanted)
	rec.add("central", c.Process)
	rec.start()
	started := time.Now()
	asking(t, "app.openmcp.cluster", c.DNS, c.Zone)
	servfails := after(started, 2*time.Minute)
	until(servfails.Add(evaluationInterval + 5*time.Second))
	rec.finish()

	end := rec.at(time.Now())
	unreachable := rec.at(after(started, time.Minute))
	want := expectation{
		{"GatewayDNSEtcdUnreachable", anyState, 0, unreachable}, {"GatewayDNSEtcdUnreachable", firing, unreachable, end},
		{"GatewayDNSServfails", anyState, 0, rec.at(servfails)}, {"GatewayDNSServfails", firing, rec.at(servfails), end},
	}
	last := end - end%evaluationInterval
	perAddress := map[string]float64{}
	share := map[string]float64{}
	for _, addr := range []string{c.DNS, c.Zone} {
		labels := fmt.Sprintf(`instance=%q,job="central",server="dns://:%s",zone="openmcp.cluster."`, c.Metrics, port(addr))
		perAddress[`{alertname="GatewayDNSServfails",`+labels+`}`] = 1
		share[fmt.Sprintf(`{job="central",server="dns://:%s",zone="openmcp.cluster."}`, port(addr))] = 1
	}
	runPromtool(t, withChecks(promtoolTests(t, t.Name(), rec, want),
		check{expr: `group by (alertname, job, instance, server, zone) (ALERTS{alertname="GatewayDNSServfails", alertstate="firing"})`, at: last, samples: perAddress},
		check{expr: dashboardQuery(t, "SERVFAIL share"), at: last, samples: share},
	))
}

// dashboardQuery is the query of the dashboard's panel title, for every server block.
func dashboardQuery(t *testing.T, title string) string {
	t.Helper()
	d, err := dashboard.Read(filepath.Join(filepath.Dir(rulesFile), "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	expr, ok := d.Query(title)
	if !ok {
		t.Fatalf("the dashboard has no panel %q of one query", title)
	}
	return strings.ReplaceAll(expr, "$server", ".*")
}

// clashesByHand writes, beside the writers' records, keys by hand: two names of their own
// under eu1 (web.eu1 an address, api.eu1 a CNAME), which are no clash of eu1's, and one name
// whose own records mix a CNAME with an address, which is. The gauge counts only the last;
// its alert (15 minutes) may be pending. The central server has two replicas, and the second
// one's watch stops moving without a word from the lead on: GatewayDNSStale fires for it
// alone, the first replica's fresh watch beside it hiding nothing.
//
// No process shows this of itself: every way a watch ends that the binary can see sets
// etcd_reachable to 0 (EtcdUnreachable's), so the recording holds the second replica's
// last_update_timestamp_seconds at its value, as a watch lost by a bug would leave it; every
// other series is what the processes exported.
func clashesByHand(t *testing.T, l *landscape) {
	e := testenv.StartEtcd(t)
	c := central(t, "central", e.ClientURL, true)
	c2 := central(t, "central-2", e.ClientURL, true, c)
	rec := newRecording(time.Second, l.wanted)
	rec.add("central", c.Process)
	rec.add("central", c2.Process)
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
	until(rec.t0.Add(lead))
	lost := time.Now()
	rec.freeze(c2.Process, "coredns_gatewaydns_last_update_timestamp_seconds")
	// Over 60 s old a minute after the freeze, then the for of 2m.
	stale := after(lost.Add(time.Minute), 2*time.Minute)
	until(stale.Add(evaluationInterval + 5*time.Second))
	rec.finish()

	for _, p := range []centralServer{c, c2} {
		body, err := p.Scrape(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !exported(body, "coredns_gatewaydns_cname_clashes", p.server(), " 1") {
			t.Errorf("%s: coredns_gatewaydns_cname_clashes of %s is not 1 at the end (shop.eu1 only)", p.Name, p.server())
		}
	}
	end := rec.at(time.Now())
	want := expectation{
		{"GatewayDNSCNAMEClash", notFiring, 0, time.Hour},
		{"GatewayDNSStale", anyState, rec.at(lost), rec.at(stale)}, {"GatewayDNSStale", firing, rec.at(stale), end},
		// On a starved machine (a loaded CI runner) a watch that hears nothing for 750 ms is
		// resumed on a new stream, and counted as a watch error while etcd answers: pending
		// at most over these four minutes, firing only after ten.
		{"GatewayDNSEtcdErrors", notFiring, 0, end},
	}
	last := end - end%evaluationInterval
	runPromtool(t, withChecks(promtoolTests(t, t.Name(), rec, want), check{
		expr: `group by (alertname, instance) (ALERTS{alertname="GatewayDNSStale", alertstate="firing"})`,
		at:   last, samples: map[string]float64{fmt.Sprintf(`{alertname="GatewayDNSStale",instance=%q}`, c2.Metrics): 1},
	}))
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
