package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// What an operator sees of an etcd outage, and of a quiet zone: the tests behind the alerts
// of docs/operations.md, against the built binary.

// problemLines are the log lines of level WARNING or ERROR in log, after skip bytes.
func problemLines(log string, skip int) []string {
	var out []string
	for _, l := range strings.Split(log[min(skip, len(log)):], "\n") {
		if strings.Contains(l, "[WARNING]") || strings.Contains(l, "[ERROR]") {
			out = append(out, l)
		}
	}
	return out
}

// TestEtcdOutageIsVisibleAndLoggedOnce: within 30 s of etcd becoming unreachable, refused
// and then black-holed, the serve role's and the writer's gauges say so, and the log says so
// once per role, not once per retry; both clear within 2 s of etcd answering again, and the
// process then holds as many watch streams as before, by its own count and by etcd's. Answers
// go on from memory throughout, and /ready stays 200: an unreachable etcd never holds back
// cluster DNS.
func TestEtcdOutageIsVisibleAndLoggedOnce(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "", "203.0.113.20")
	k8s.HTTPRoute("infra", "web", "infra", "public", "web.eu1.openmcp.cluster")

	etcdP := e2e.Proxied(t, strings.TrimPrefix(etcd.ClientURL, "http://"))
	p := corednsproc.Start(t, "outage.Corefile", e2e.BothRoles("http://"+etcdP.Addr, "outage", kube.KubeconfigFile))
	p.WaitReady(t, 30*time.Second)
	e2e.WaitFor(t, 15*time.Second, p.DNS, "web.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.20"))
	writerReachable := `coredns_gatewaydns_writer_etcd_reachable{owner="outage"}`
	p.WaitMetric(t, 10*time.Second, e2e.ReachableOf, e2e.IsOne)
	p.WaitMetric(t, 10*time.Second, writerReachable, e2e.IsOne)
	// One stream for the zone's prefix, one for the leader's key.
	serveStreams := `coredns_gatewaydns_etcd_watch_streams{zones="openmcp.cluster."}`
	writerStreams := `coredns_gatewaydns_writer_etcd_watch_streams{owner="outage"}`
	p.WaitMetric(t, 10*time.Second, serveStreams, e2e.IsOne)
	p.WaitMetric(t, 10*time.Second, writerStreams, e2e.IsOne)
	etcdStreams := func() int {
		n, err := etcd.WatchStreams(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	streamsBefore := etcdStreams()

	for _, fault := range []struct {
		name  string
		apply func()
	}{
		{"refused", etcdP.Cut},
		{"black-holed", etcdP.BlackHole},
	} {
		before := len(p.Output())
		answers := e2e.PollDNS(p.DNS, "web.eu1.openmcp.cluster.", "203.0.113.20")
		ready := e2e.PollReady(p.Ready)
		cut := time.Now()
		fault.apply()
		p.WaitMetric(t, 30*time.Second, e2e.ReachableOf, e2e.IsZero)
		serveSeen := time.Since(cut)
		p.WaitMetric(t, 30*time.Second, writerReachable, e2e.IsZero)
		writerSeen := time.Since(cut)
		// Hold the outage for a while: retries go on, the log must not.
		quiet := time.Now().Add(10 * time.Second)
		for time.Now().Before(quiet) {
			if v, _ := p.Metric(e2e.ReachableOf); v != 0 {
				t.Fatalf("%s: etcd_reachable went back to %v while etcd is still %s", fault.name, v, fault.name)
			}
			time.Sleep(100 * time.Millisecond)
		}
		during := problemLines(p.Output(), before)
		etcdP.Restore()
		back := time.Now()
		p.WaitMetric(t, 30*time.Second, e2e.ReachableOf, e2e.IsOne)
		serveBack := time.Since(back)
		p.WaitMetric(t, 30*time.Second, writerReachable, e2e.IsOne)
		writerBack := time.Since(back)
		if serveBack > 2*time.Second || writerBack > 2*time.Second {
			t.Errorf("etcd %s: reachable again after %s (serve role) and %s (writer), want within 2s of etcd answering",
				fault.name, serveBack.Round(time.Millisecond), writerBack.Round(time.Millisecond))
		}
		p.WaitMetric(t, 10*time.Second, serveStreams, e2e.IsOne)
		p.WaitMetric(t, 10*time.Second, writerStreams, e2e.IsOne)
		deadline := time.Now().Add(10 * time.Second)
		for n := etcdStreams(); n != streamsBefore; n = etcdStreams() {
			if time.Now().After(deadline) {
				t.Fatalf("etcd %s: etcd serves %d watch streams after the outage, %d before", fault.name, n, streamsBefore)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("etcd %s: serve role reported it after %s, writer after %s; back after %s and %s; %d warnings or errors logged meanwhile:\n%s",
			fault.name, serveSeen.Round(time.Millisecond), writerSeen.Round(time.Millisecond),
			serveBack.Round(time.Millisecond), writerBack.Round(time.Millisecond), len(during), strings.Join(during, "\n"))
		// One line for the serve role and one for the writer, at most one more per role for
		// a request that was in flight when the link went.
		if len(during) > 4 {
			t.Errorf("etcd %s: %d warnings or errors logged in %s, want one per role", fault.name, len(during), time.Since(cut).Round(time.Second))
		}
		answers.Finish(t, fmt.Sprintf("web.eu1 while etcd is %s", fault.name))
		ready.Finish(t)
	}
	// Still publishing after the outages.
	k8s.HTTPRoute("infra", "after", "infra", "public", "after.eu1.openmcp.cluster")
	e2e.WaitFor(t, 15*time.Second, p.DNS, "after.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.20"))
}

// TestStalenessAlertOnlyFiresWhenStale: the documented alert "answers are stale"
// (time() - coredns_gatewaydns_last_update_timestamp_seconds > 60) stays silent on a healthy
// server whose zone does not change, and fires once the watch is cut off.
func TestStalenessAlertOnlyFiresWhenStale(t *testing.T) {
	const threshold = 60 * time.Second // as in docs/operations.md
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	e2e.PutEtcd(t, cli, "/skydns/cluster/openmcp/quiet/1", `{"host":"198.51.100.30"}`)
	etcdP := e2e.Proxied(t, strings.TrimPrefix(etcd.ClientURL, "http://"))
	p := corednsproc.Start(t, "quiet.Corefile", fmt.Sprintf("openmcp.cluster {\n    ready\n    prometheus :9153\n    gatewaydns {\n        endpoint http://%s\n    }\n}\n", etcdP.Addr))
	p.WaitReady(t, 30*time.Second)

	const series = `coredns_gatewaydns_last_update_timestamp_seconds{zones="openmcp.cluster."}`
	age := func() time.Duration {
		v, ok := p.Metric(series)
		if !ok || v == 0 {
			t.Fatalf("%s is not exported", series)
		}
		return time.Since(time.Unix(0, int64(v*1e9)))
	}
	// Quiet for longer than the time freshness may lag: nothing changes in the zone.
	var oldest time.Duration
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		oldest = max(oldest, age())
	}
	t.Logf("quiet zone: the age of the answers was at most %s over 15s", oldest.Round(time.Millisecond))
	if oldest > 5*time.Second {
		t.Errorf("a healthy quiet server reported answers %s old: freshness must move without changes", oldest)
	}

	etcdP.BlackHole()
	deadline := time.Now().Add(threshold + 30*time.Second)
	for age() <= threshold {
		if time.Now().After(deadline) {
			t.Fatalf("the watch has been cut for %s and the age of the answers is still %s", threshold+30*time.Second, age())
		}
		time.Sleep(time.Second)
	}
	t.Logf("cut off: the alert fires with an age of %s", age().Round(time.Second))
}

// TestRouteDeletedWhileTheWriterWasDownIsGoneAtOnce: a route deleted while its cluster's only
// writer was stopped is gone from DNS within 5 s of the writer's start, not at the next
// periodic resync.
func TestRouteDeletedWhileTheWriterWasDownIsGoneAtOnce(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "", "203.0.113.40")
	k8s.HTTPRoute("infra", "stays", "infra", "public", "stays.eu1.openmcp.cluster")
	k8s.HTTPRoute("infra", "goes", "infra", "public", "goes.eu1.openmcp.cluster")

	central := e2e.RunCentral(t, etcd.ClientURL)
	w := e2e.RunWriter(t, "writer", etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster")
	w.WaitReady(t, 30*time.Second)
	e2e.WaitFor(t, 15*time.Second, central.DNS, "goes.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.40"))
	if took := w.Sigterm(t, 3*time.Second); took > 3*time.Second {
		t.Fatalf("the writer took %s to stop", took)
	}
	k8s.DeleteHTTPRoute("infra", "goes")

	started := time.Now()
	e2e.RunWriter(t, "writer-again", etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster")
	e2e.WaitFor(t, 5*time.Second, central.DNS, "goes.eu1.openmcp.cluster.", dns.TypeA, e2e.IsNXDOMAIN)
	t.Logf("the deleted route was gone %s after the writer started", time.Since(started).Round(time.Millisecond))
	e2e.WaitFor(t, time.Second, central.DNS, "stays.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.40"))
}

// TestACrashedWriterRestartedAtOnceTakesOverFromItsGhost: a writer SIGKILLed and started again
// at once, in the same pod (the same POD_NAME), leads without waiting for its dead
// predecessor's election key to expire: a route deleted meanwhile is gone within 3 s of the
// start, and until the new process writes, its writer_leader says 0. Before, it waited out
// the dead session's TTL (10 s): the deleted name was answered for 8-9 s after the start.
func TestACrashedWriterRestartedAtOnceTakesOverFromItsGhost(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "", "203.0.113.41")
	k8s.HTTPRoute("infra", "stays", "infra", "public", "stays.eu1.openmcp.cluster")
	k8s.HTTPRoute("infra", "goes", "infra", "public", "goes.eu1.openmcp.cluster")

	central := e2e.RunCentral(t, etcd.ClientURL)
	const pod = "POD_NAME=coredns-eu1-0"
	corefile := e2e.WriterCorefile(etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster")
	w := corednsproc.Start(t, "writer.Corefile", corefile, pod)
	w.WaitReady(t, 30*time.Second)
	w.WaitMetric(t, 10*time.Second, fmt.Sprintf(e2e.LeaderOf, "eu1"), e2e.IsOne)
	e2e.WaitFor(t, 15*time.Second, central.DNS, "goes.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.41"))

	w.Kill()
	k8s.DeleteHTTPRoute("infra", "goes")
	started := time.Now()
	again := corednsproc.Start(t, "writer-again.Corefile", corefile, pod)
	// Until it leads, the new process says it does not write: never 1 before it does.
	var sawZero bool
	for {
		v, ok := again.Metric(fmt.Sprintf(e2e.LeaderOf, "eu1"))
		if ok && v == 0 {
			sawZero = true
		}
		if ok && v == 1 {
			break
		}
		if time.Since(started) > 10*time.Second {
			t.Fatalf("the restarted writer did not lead within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	led := time.Since(started)
	e2e.WaitFor(t, 3*time.Second-time.Since(started), central.DNS, "goes.eu1.openmcp.cluster.", dns.TypeA, e2e.IsNXDOMAIN)
	t.Logf("the restarted writer led %s after its start (writer_leader 0 before: %v); the deleted route was gone after %s",
		led.Round(time.Millisecond), sawZero, time.Since(started).Round(time.Millisecond))
	e2e.WaitFor(t, time.Second, central.DNS, "stays.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.41"))
}
