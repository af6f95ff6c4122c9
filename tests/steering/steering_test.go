// Package steering tests one name published by many clusters (issue 36, the serve half):
// weights, failover tiers, health checks and local first, answered by the built binary from two
// real kube-apiservers' Gateways, and followed by Knot as a secondary.
package steering

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// steeringLandscape is issue 36's landscape: two clusters (eu1, us1), each its own real
// kube-apiserver with a Gateway and a writer binary, one etcd, the central server
// (corefile.d/steering.Corefile, built binary) with Knot as its secondary, and the health
// endpoints of the Gateways' addresses (127.0.0.11 for eu1, 127.0.0.12 for us1), which the test
// opens and closes. A client asking from 127.0.0.21 is in eu1's network, from 127.0.0.22 in
// us1's.
type steeringLandscape struct {
	kube    map[string]*testenv.Kube
	k8s     map[string]*gatewayfixture.Cluster
	writers map[string]*corednsproc.Process
	central *corednsproc.Process
	knot    *e2e.Secondary
	tcp     map[string]*e2e.TCPEndpoint // "name cluster": the tcp check's listener
	http    *e2e.HTTPEndpoint           // eu1's http check of httpchk
}

var steeringAddr = map[string]string{"eu1": "127.0.0.11", "us1": "127.0.0.12"}

const (
	eu1Client = "127.0.0.21"
	us1Client = "127.0.0.22"
)

// steeringRoutes are the names each cluster publishes and their annotations, by cluster; the
// ports of the checks are filled in.
func steeringRoutes(tcpPort, allPort, httpPort int) map[string]map[string][]string {
	check := func(p int) string { return fmt.Sprintf("tcp://:%d", p) }
	return map[string]map[string][]string{
		"canary":  {"eu1": {source.WeightAnnotation, "90"}, "us1": {source.WeightAnnotation, "10"}},
		"standby": {"eu1": {source.PriorityAnnotation, "1"}, "us1": {source.PriorityAnnotation, "2"}},
		"checked": {"eu1": {source.PriorityAnnotation, "1", source.HealthCheckAnnotation, check(tcpPort)}, "us1": {source.PriorityAnnotation, "2"}},
		"httpchk": {"eu1": {source.PriorityAnnotation, "1", source.HealthCheckAnnotation, fmt.Sprintf("http://:%d/healthz", httpPort)}, "us1": {source.PriorityAnnotation, "2"}},
		"allfail": {"eu1": {source.HealthCheckAnnotation, check(allPort)}, "us1": {source.HealthCheckAnnotation, check(allPort)}},
		"local":   {"eu1": nil, "us1": nil},
	}
}

func fqdn(label string) string { return label + ".global.openmcp.cluster." }

func startSteeringLandscape(t *testing.T) *steeringLandscape {
	start := time.Now()
	l := &steeringLandscape{kube: map[string]*testenv.Kube{}, k8s: map[string]*gatewayfixture.Cluster{},
		writers: map[string]*corednsproc.Process{}, tcp: map[string]*e2e.TCPEndpoint{}}
	etcd := testenv.StartEtcd(t)
	tcpPort, allPort, httpPort := corednsproc.FreePort(t), corednsproc.FreePort(t), corednsproc.FreePort(t)
	for _, c := range []string{"eu1", "us1"} {
		l.tcp["checked "+c] = e2e.NewTCPEndpoint(t, fmt.Sprintf("%s:%d", steeringAddr[c], tcpPort))
		l.tcp["allfail "+c] = e2e.NewTCPEndpoint(t, fmt.Sprintf("%s:%d", steeringAddr[c], allPort))
	}
	l.http = e2e.NewHTTPEndpoint(t, fmt.Sprintf("%s:%d", steeringAddr["eu1"], httpPort))
	routes := steeringRoutes(tcpPort, allPort, httpPort)
	for _, c := range []string{"eu1", "us1"} {
		l.kube[c] = testenv.StartKubeAPIServer(t)
		k8s := gatewayfixture.New(t, l.kube[c].Config)
		l.k8s[c] = k8s
		k8s.Namespace("infra")
		k8s.Namespace("shop")
		k8s.Gateway("infra", "gw", gatewayv1.HTTPProtocolType, 80, "", steeringAddr[c])
		k8s.SetGatewayProgrammed("infra", "gw", metav1.ConditionTrue)
		for name, by := range routes {
			k8s.HTTPRoute("shop", name, "infra", "gw", strings.TrimSuffix(fqdn(name), "."))
			if len(by[c]) > 0 {
				k8s.AnnotateHTTPRoute("shop", name, by[c]...)
			}
		}
		l.writers[c] = e2e.RunWriter(t, c, etcd.ClientURL, c, l.kube[c].KubeconfigFile, "global.openmcp.cluster")
	}
	l.knot = e2e.NewSecondary(t, "knot", "", nil)
	l.central = e2e.RunCorefile(t, "steering.Corefile", "GATEWAYDNS_ETCD_ENDPOINTS="+etcd.ClientURL, "GATEWAYDNS_SECONDARIES="+l.knot.DNS,
		"GATEWAYDNS_EU1_NETWORKS="+eu1Client+"/32", "GATEWAYDNS_US1_NETWORKS="+us1Client)
	l.central.WaitReady(t, 30*time.Second)
	l.knot.Primary = l.central.DNS
	l.knot.Start(t)
	for _, w := range l.writers {
		w.WaitReady(t, 60*time.Second)
	}
	for name := range routes {
		e2e.WaitFor(t, 15*time.Second, l.central.DNS, fqdn(name), dns.TypeA, e2e.HasAnswer)
	}
	waitSerial(t, 15*time.Second, l.central.DNS, l.knot)
	t.Logf("landscape up in %s", time.Since(start).Round(time.Millisecond))
	return l
}

// TestSteeringAcrossTwoClusters (issue 36, the serve half): names two clusters publish with
// steering annotations are answered, per question, by the central server built from this
// repository, from its own health checks, its clients' networks and the policies, and Knot
// follows the failovers by NOTIFY and IXFR. One landscape for every case; each case waits on
// its condition and takes a few seconds.
func TestSteeringAcrossTwoClusters(t *testing.T) {
	l := startSteeringLandscape(t)
	t.Run("weights 90/10: each owner's share within 3 points over 10,000 questions", l.weights)
	t.Run("priority 1/2: eu1 alone; its Gateway not Programmed: us1 within 1s, and back", l.priorities)
	t.Run("a tcp check's listener closed: eu1 out within 2s, Knot too; reopened: back within 2s", l.tcpFailover)
	t.Run("an http check answering 503: eu1 out within 2s; 200 again: back within 2s", l.httpFailover)
	t.Run("local first: eu1's network gets eu1, us1's us1, over UDP, TCP and ECS", l.localFirst)
	t.Run("every owner failing its check: the union, and the fail-open metric and explain say so", l.failOpen)
	t.Run("eu1 dies whole (writer, API server and endpoint): out within 2s", l.clusterDies)
}

func (l *steeringLandscape) weights(t *testing.T) {
	const n = 10000
	const batched = `coredns_gatewaydns_udp_batch_questions_total{outcome="answered"}`
	before, _ := l.central.Metric(batched)
	answers := func(owner string) float64 {
		v, _ := l.central.Metric(`coredns_gatewaydns_steering_answers_total{name="canary.global.openmcp.cluster.",owner="` + owner + `"}`)
		return v
	}
	euBefore, usBefore := answers("eu1"), answers("us1")
	count := map[string]int{}
	for i := range n {
		netw := "udp"
		if i%5 == 0 {
			netw = "tcp" // a fifth over TCP
		}
		count[e2e.AddressesFrom(t, netw, "", l.central.DNS, fqdn("canary"))]++
	}
	eu, us := float64(count[steeringAddr["eu1"]])/n, float64(count[steeringAddr["us1"]])/n
	t.Logf("eu1 %.4f, us1 %.4f of %d questions (%v)", eu, us, n, count)
	if eu < 0.87 || eu > 0.93 || us < 0.07 || us > 0.13 || count[steeringAddr["eu1"]]+count[steeringAddr["us1"]] != n {
		t.Errorf("shares eu1 %.4f, us1 %.4f: want 0.90 and 0.10 within 0.03, one owner per answer (%v)", eu, us, count)
	}
	// steering-metrics counts each answer by its owner, on every path.
	if eu, us := answers("eu1")-euBefore, answers("us1")-usBefore; eu != float64(count[steeringAddr["eu1"]]) || us != float64(count[steeringAddr["us1"]]) {
		t.Errorf("steering_answers_total counted eu1 %.0f, us1 %.0f; answered %v", eu, us, count)
	}
	// The UDP questions are answered by the batched path, from the packed reply of each
	// question's choice (the first of each choice aside).
	after, _ := l.central.Metric(batched)
	t.Logf("%.0f of the %d UDP questions answered by the batched path", after-before, n*4/5)
	if after-before < n*4/5-10 {
		t.Errorf("the batched UDP path answered %.0f of the %d UDP questions, want all but the first of each choice", after-before, n*4/5)
	}
}

func (l *steeringLandscape) priorities(t *testing.T) {
	name, eu1, us1 := fqdn("standby"), steeringAddr["eu1"], steeringAddr["us1"]
	if got := e2e.AddressesFrom(t, "tcp", "", l.central.DNS, name); got != eu1 {
		t.Fatalf("standby: %s, want eu1's %s alone", got, eu1)
	}
	changed := time.Now()
	l.k8s["eu1"].SetGatewayProgrammed("infra", "gw", metav1.ConditionFalse)
	took := untilAnswered(t, l.central.DNS, name, us1, changed, 5*time.Second)
	t.Logf("eu1 not Programmed: us1 after %s", took.Round(time.Millisecond))
	if took > time.Second {
		t.Errorf("us1 answered %s after eu1's Gateway stopped being Programmed, want within 1s", took)
	}
	changed = time.Now()
	l.k8s["eu1"].SetGatewayProgrammed("infra", "gw", metav1.ConditionTrue)
	took = untilAnswered(t, l.central.DNS, name, eu1, changed, 5*time.Second)
	t.Logf("eu1 Programmed again: eu1 after %s", took.Round(time.Millisecond))
	if took > time.Second {
		t.Errorf("eu1 answered %s after its Gateway was Programmed again, want within 1s", took)
	}
	for _, name := range []string{fqdn("checked"), fqdn("httpchk")} { // the other names of the Gateway are back too
		e2e.WaitFor(t, 5*time.Second, l.central.DNS, name, dns.TypeA, e2e.AnswersWith(eu1))
	}
}

func (l *steeringLandscape) tcpFailover(t *testing.T) {
	name, eu1, us1 := fqdn("checked"), steeringAddr["eu1"], steeringAddr["us1"]
	e2e.WaitFor(t, 5*time.Second, l.knot.DNS, name, dns.TypeA, e2e.AnswersWith(eu1))
	poll := e2e.PollDNSFor(l.central.DNS, name, e2e.Among(eu1, us1))
	closed := time.Now()
	l.tcp["checked eu1"].Close()
	l.followedWithin2s(t, "listener closed", name, us1, closed)
	explained := explainLines(t, l.central.DNS, name)
	if !strings.Contains(explained, "owner=eu1 weight=none tier=1 health=down") || !strings.Contains(explained, "left out: every address fails its health check") {
		t.Errorf("explain does not say eu1 is down and left out:\n%s", explained)
	}
	reopened := time.Now()
	l.tcp["checked eu1"].Open(t)
	l.followedWithin2s(t, "listener reopened", name, eu1, reopened)
	poll.Finish(t, "answers meanwhile")
}

// followedWithin2s waits until the central server and Knot answer name with want, and fails
// the test when either took more than 2 s from since.
func (l *steeringLandscape) followedWithin2s(t *testing.T, what, name, want string, since time.Time) {
	t.Helper()
	took := untilAnswered(t, l.central.DNS, name, want, since, 5*time.Second)
	knot := untilAnswered(t, l.knot.DNS, name, want, since, 5*time.Second)
	t.Logf("%s: %s after %s, at Knot after %s", what, want, took.Round(time.Millisecond), knot.Round(time.Millisecond))
	if took > 2*time.Second || knot > 2*time.Second {
		t.Errorf("%s: %s answered after %s (Knot %s), want both within 2s", what, want, took, knot)
	}
}

func (l *steeringLandscape) httpFailover(t *testing.T) {
	name, eu1, us1 := fqdn("httpchk"), steeringAddr["eu1"], steeringAddr["us1"]
	poll := e2e.PollDNSFor(l.central.DNS, name, e2e.Among(eu1, us1))
	for _, step := range []struct {
		status int
		want   string
	}{{http.StatusServiceUnavailable, us1}, {http.StatusOK, eu1}} {
		changed := time.Now()
		l.http.Status.Store(int32(step.status))
		took := untilAnswered(t, l.central.DNS, name, step.want, changed, 5*time.Second)
		t.Logf("health endpoint answering %d: %s after %s", step.status, step.want, took.Round(time.Millisecond))
		if took > 2*time.Second {
			t.Errorf("health endpoint answering %d: %s answered after %s, want within 2s", step.status, step.want, took)
		}
	}
	poll.Finish(t, "answers meanwhile")
}
