// Package faults tests the rare days end to end: etcd outages and frozen members
// (outage_test.go, failover_test.go), a server that never reaches etcd (never_loaded_test.go),
// etcd's members replaced, etcd restored from a snapshot and etcd full (etcd_days_test.go),
// crashed writers, a kube-apiserver restarting again and again (apiserver_restarts_test.go,
// faults_test.go), and a seeded schedule of all of them after which every name must converge
// (convergence_test.go).
package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/tcpproxy"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// faultPoller asks for the stable names without pause and records every failure.
type faultPoller struct {
	addr     string
	names    map[string]string // name -> its one A record
	stop     atomic.Bool
	wg       sync.WaitGroup
	asked    atomic.Int64
	mu       sync.Mutex
	failures []string
}

func (fp *faultPoller) start() {
	fp.stop.Store(false)
	fp.wg.Add(1)
	go func() {
		defer fp.wg.Done()
		var names []string
		for n := range fp.names {
			names = append(names, n)
		}
		for i := 0; !fp.stop.Load(); i++ {
			name := names[i%len(names)]
			netw := "udp"
			if i%4 == 0 {
				netw = "tcp"
			}
			r, err := e2e.Exchange(netw, fp.addr, name, dns.TypeA)
			fp.asked.Add(1)
			if err != nil || !e2e.AnswersWith(fp.names[name])(r) {
				fp.mu.Lock()
				if err != nil {
					fp.failures = append(fp.failures, fmt.Sprintf("%s %s %s: %v", time.Now().Format("15:04:05.000"), netw, name, err))
				} else {
					fp.failures = append(fp.failures, fmt.Sprintf("%s %s %s: rcode=%s %v", time.Now().Format("15:04:05.000"), netw, name, dns.RcodeToString[r.Rcode], r.Answer))
				}
				fp.mu.Unlock()
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
}

// finish stops the poller and returns how many questions it asked and the failures.
func (fp *faultPoller) finish() (int64, []string) {
	fp.stop.Store(true)
	fp.wg.Wait()
	fp.mu.Lock()
	defer fp.mu.Unlock()
	f := fp.failures
	fp.failures = nil
	return fp.asked.Swap(0), f
}

// TestFaultsAnswerFromMemoryAndConverge puts a slow link, then a partition, then an etcd
// kill between the server and etcd. During each fault, stable names keep answering from
// memory (polled without pause over UDP and TCP: no SERVFAIL, no timeout, no wrong answer);
// changes made through a direct etcd client during the fault (a put of a new name, a change
// and a delete) are all answered once the fault is over.
func TestFaultsAnswerFromMemoryAndConverge(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	link, err := tcpproxy.Start(strings.TrimPrefix(etcd.ClientURL, "http://")) // server -> link -> etcd
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.Close() })

	put := func(k, v string) {
		t.Helper()
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := cli.Put(ctx, k, v)
			cancel()
			if err == nil {
				return
			}
			if attempt == 10 {
				t.Fatalf("put %s: %v", k, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	del := func(k string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := cli.Delete(ctx, k); err != nil {
			t.Fatalf("delete %s: %v", k, err)
		}
	}

	stable := map[string]string{}
	for i := range 10 {
		ip := fmt.Sprintf("10.40.0.%d", i+1)
		put(fmt.Sprintf("/skydns/test/zone/stable%d/1", i), `{"host":"`+ip+`"}`)
		stable[fmt.Sprintf("stable%d.zone.test.", i)] = ip
	}
	for _, f := range []string{"slow", "partition", "kill"} {
		put("/skydns/test/zone/"+f+"-change/1", `{"host":"10.41.0.1"}`)
		put("/skydns/test/zone/"+f+"-gone/1", `{"host":"10.41.0.2"}`)
	}
	addr := e2e.ServeZone(t, "http://"+link.Addr, cli)
	e2e.WaitFor(t, 10*time.Second, addr, "kill-gone.zone.test.", dns.TypeA, e2e.AnswersWith("10.41.0.2"))

	fp := &faultPoller{addr: addr, names: stable}
	changeDuring := func(f string) {
		put("/skydns/test/zone/"+f+"-new/1", `{"host":"10.42.0.1"}`)
		put("/skydns/test/zone/"+f+"-change/1", `{"host":"10.42.0.2"}`)
		del("/skydns/test/zone/" + f + "-gone/1")
	}
	converge := func(f string) time.Duration {
		start := time.Now()
		e2e.WaitFor(t, 30*time.Second, addr, f+"-new.zone.test.", dns.TypeA, e2e.AnswersWith("10.42.0.1"))
		e2e.WaitFor(t, 30*time.Second, addr, f+"-change.zone.test.", dns.TypeA, e2e.AnswersWith("10.42.0.2"))
		e2e.WaitFor(t, 30*time.Second, addr, f+"-gone.zone.test.", dns.TypeA, e2e.IsNXDOMAIN)
		return time.Since(start)
	}
	report := func(f string, during time.Duration, took time.Duration) {
		t.Helper()
		asked, failures := fp.finish()
		errs := e2e.MetricSum(t, "coredns_gatewaydns_etcd_errors_total", map[string]string{"zones": "zone.test."})
		t.Logf("%s: %d questions for %d stable names over %s, %d failed; 3 changes made during the fault answered %s after recovery (slow link: after the change); etcd_errors_total so far %v",
			f, asked, len(stable), during.Round(time.Millisecond), len(failures), took.Round(time.Millisecond), errs)
		if len(failures) > 0 {
			t.Errorf("%s: %d of %d questions failed; first ones:\n%s", f, len(failures), asked, strings.Join(failures[:min(len(failures), 20)], "\n"))
		}
		if asked < 100 {
			t.Errorf("%s: only %d questions asked: the poller did not run", f, asked)
		}
	}

	// 1. A slow link: 300ms each way on every chunk.
	fp.start()
	start := time.Now()
	link.SetDelay(300 * time.Millisecond)
	time.Sleep(time.Second)
	changeDuring("slow")
	took := converge("slow") // over the slow link itself
	if took < 250*time.Millisecond {
		t.Errorf("slow link: changes answered after %s, less than the link's latency: the link was not slow", took)
	}
	time.Sleep(2 * time.Second)
	during := time.Since(start)
	link.SetDelay(0)
	report("slow link", during, took)

	// 2. A partition: every connection to etcd dropped and refused.
	fp.start()
	start = time.Now()
	link.Cut()
	changeDuring("partition")
	time.Sleep(3 * time.Second)
	for name, ip := range stable { // and over TCP from a fresh connection, explicitly
		if r := e2e.Ask(t, "tcp", addr, name, dns.TypeA); !e2e.AnswersWith(ip)(r) {
			t.Errorf("partition: %s answered %v", name, r)
		}
	}
	during = time.Since(start)
	link.Restore()
	report("partition", during, converge("partition"))

	// 3. etcd killed (SIGKILL) and restarted on the same port and data. Changes cannot be
	// made while it is down: they are made right after the restart, while the server is
	// still backing off, and behind a partition so that the server cannot see them at once.
	fp.start()
	start = time.Now()
	etcd.Kill()
	time.Sleep(3 * time.Second)
	link.Cut()
	etcd.Restart()
	changeDuring("kill")
	during = time.Since(start)
	link.Restore()
	report("etcd killed", during, converge("kill"))

	// Everything from before is still there.
	for name, ip := range stable {
		if r := e2e.Ask(t, "udp", addr, name, dns.TypeA); !e2e.AnswersWith(ip)(r) {
			t.Errorf("after the faults: %s answered %v", name, r)
		}
	}
}

// TestWriterKeepsItsNamesWhileKubeAPIServerRestarts stops a workload cluster's kube-apiserver
// under a running writer for longer than its informers take to notice, then starts it again.
// While it is down the writer's names keep answering and no key of the cluster is deleted or
// rewritten (an unreachable API is no reason to unpublish); once it is back, a route deleted, a
// route added and a Gateway address changed are all published, without a restart of the writer.
func TestWriterKeepsItsNamesWhileKubeAPIServerRestarts(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	// Without a grace period for watches, kube-apiserver's graceful stop waits for every open
	// watch to time out (a minute); with one it closes them, as production setups configure it.
	kube := testenv.StartKubeAPIServer(t, testenv.WithAPIServerFlag("shutdown-watch-termination-grace-period", "2s"))
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "", "203.0.113.10")
	k8s.HTTPRoute("infra", "stay", "infra", "public", "stay.eu1.openmcp.cluster")
	k8s.HTTPRoute("infra", "gone", "infra", "public", "gone.eu1.openmcp.cluster")

	central := e2e.RunCentral(t, etcd.ClientURL)
	writer := e2e.RunWriter(t, "writer", etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster")
	writer.WaitReady(t, 60*time.Second)
	for _, name := range []string{"stay.eu1.openmcp.cluster.", "gone.eu1.openmcp.cluster."} {
		e2e.WaitFor(t, 15*time.Second, central.DNS, name, dns.TypeA, e2e.AnswersWith("203.0.113.10"))
	}
	const prefix = "/skydns/cluster/openmcp/eu1/"
	before := e2e.KeysUnder(t, cli, prefix)

	stay := e2e.PollDNS(central.DNS, "stay.eu1.openmcp.cluster.", "203.0.113.10")
	gone := e2e.PollDNS(central.DNS, "gone.eu1.openmcp.cluster.", "203.0.113.10")
	kube.StopAPIServer(t)
	// The informers' watches break at once; their relists fail for as long as it is down.
	time.Sleep(5 * time.Second)
	if during := e2e.KeysUnder(t, cli, prefix); fmt.Sprint(during) != fmt.Sprint(before) {
		t.Errorf("the cluster's keys changed while its kube-apiserver was down:\nbefore %v\nduring %v", before, during)
	}
	kube.StartAPIServer(t)
	stay.Finish(t, "stay.eu1 while the kube-apiserver was down and came back")
	gone.Finish(t, "gone.eu1 while the kube-apiserver was down and came back")

	k8s.DeleteHTTPRoute("infra", "gone")
	k8s.HTTPRoute("infra", "new", "infra", "public", "new.eu1.openmcp.cluster")
	k8s.SetGatewayAddresses("infra", "public", "203.0.113.20")
	e2e.WaitFor(t, 30*time.Second, central.DNS, "new.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.20"))
	e2e.WaitFor(t, 10*time.Second, central.DNS, "stay.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.20"))
	e2e.WaitFor(t, 10*time.Second, central.DNS, "gone.eu1.openmcp.cluster.", dns.TypeA, func(r *dns.Msg) bool { return r.Rcode == dns.RcodeNameError })
	if !writer.Running() {
		t.Fatal("the writer exited")
	}
}
