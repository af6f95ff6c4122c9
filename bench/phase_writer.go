package main

import (
	"context"
	"fmt"
	"net"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gatewaydns/gatewaydns/internal/promtext"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// phaseW: -routes HTTPRoutes exist before the writer starts; from the writer's process start
// to every name in etcd, and what etcd counted meanwhile.
func (h *harness) phaseW() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	k, rs, err := h.clusterRoutes(ctx)
	if err != nil {
		return err
	}
	w := &wResults{routes: rs.n, gateways: len(rs.gateways), create: rs.created}

	prefix := record.NamePath(record.DefaultPrefix, routeDomain) + "/"
	before, err := readEtcdCounters(h.etcd.ClientURL)
	if err != nil {
		return err
	}
	_, rev0, err := countPrefix(ctx, h.cli, "/")
	if err != nil {
		return err
	}
	apiserver := childrenNamed("kube-apiserver")
	apiCPU0, err := cpuTimes(apiserver)
	if err != nil {
		return err
	}
	etcdCPU0, err := cpuTimes(h.etcdPIDs)
	if err != nil {
		return err
	}
	// gctrace: the writer's live heap, from its log (liveHeaps).
	env := []string{gcTraceEnv}
	if h.opt.writerLimit != "" {
		env = append(env, "GOMEMLIMIT="+h.opt.writerLimit)
	}
	w.memLimit = h.opt.writerLimit
	writer, err := h.startCoreDNS(serverSpec{name: "writer-w", metrics: true, pprof: h.opt.profile, env: env,
		body: fmt.Sprintf("gatewaydns {\n    endpoint %s\n    owner bench-w\n    kubeconfig %s\n    domain-filter %s\n    publish-only\n}",
			h.etcd.ClientURL, k.kube.KubeconfigFile, routeDomain)})
	if err != nil {
		return err
	}
	var profiled chan error
	if h.opt.profile {
		profiled = make(chan error, 1)
		go func() { profiled <- h.profileFromStart(writer, "cpu-writer-w", writerProfileSeconds) }()
	}
	readyc := make(chan error, 1)
	go func() {
		d, err := writer.waitReady(5 * time.Minute)
		w.ready = d
		readyc <- err
	}()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		n, _, err := countPrefix(ctx, h.cli, prefix)
		if err != nil {
			return err
		}
		if n >= int64(w.routes) {
			w.published = time.Since(writer.started)
			if err := w.cpu.read(writer.pid(), apiserver, h.etcdPIDs, apiCPU0, etcdCPU0); err != nil {
				return err
			}
			break
		}
		if !writer.Running() {
			return writer.failure(errExited)
		}
		if time.Now().After(deadline) {
			return writer.failure(fmt.Errorf("%d of %d names in etcd after 5m", n, w.routes))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := <-readyc; err != nil {
		return err
	}
	if profiled != nil {
		if err := <-profiled; err != nil {
			return err
		}
		if err := h.fetchProfile(writer, "heap", "heap-writer-w", 30*time.Second); err != nil {
			return err
		}
	}
	// Let the writer finish what it does after the last name (its sync bookkeeping), then read
	// the counters.
	time.Sleep(2 * time.Second)
	after, err := readEtcdCounters(h.etcd.ClientURL)
	if err != nil {
		return err
	}
	_, rev1, err := countPrefix(ctx, h.cli, "/")
	if err != nil {
		return err
	}
	w.etcd, w.revisions = after.minus(before), rev1-rev0
	if w.peakRSS, err = peakRSSBytes(writer.pid()); err != nil {
		return err
	}
	if w.liveHeap, w.liveHeapEnd, err = liveHeaps(writer.Log); err != nil {
		return err
	}
	if text, err := promtext.Scrape(nil, writer.metricsURL); err == nil {
		w.writes, _ = promtext.Sum(text, `coredns_gatewaydns_writer_writes_total{owner="bench-w"}`)
	}
	writer.stop()
	h.res.w = w
	logf("W: %d names in etcd %v after the writer's start (ready after %v); etcd counted %.0f Txn and %.0f Put RPCs, %.0f keys written, %d revisions",
		w.routes, w.published.Round(time.Millisecond), w.ready.Round(time.Millisecond), w.etcd.txns, w.etcd.puts, w.etcd.keysPut, w.revisions)
	logf("W: CPU time until then: writer %v, kube-apiserver %v, etcd %v; the writer's peak RSS %.0f MB, live heap %.0f MB at most, %.0f MB at the end (GOMEMLIMIT %q)",
		w.cpu.writer.Round(10*time.Millisecond), w.cpu.apiserver.Round(10*time.Millisecond), w.cpu.etcd.Round(10*time.Millisecond),
		mb(w.peakRSS), mb(w.liveHeap), mb(w.liveHeapEnd), w.memLimit)
	return nil
}

// waitQuiet gives the API server a moment after the burst of creates, so that the writer's
// start is not measured against a backlog: it waits until a list of namespaces answers fast.
func waitQuiet(ctx context.Context, k *kubeEnv) error {
	cs, err := kubernetes.NewForConfig(k.kube.Config)
	if err != nil {
		return fmt.Errorf("kube client: %w", err)
	}
	for range 50 {
		t := time.Now()
		if _, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
			return fmt.Errorf("kube-apiserver: listing namespaces: %w", err)
		}
		if time.Since(t) < 20*time.Millisecond {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// writerProfileSeconds is how long the CPU profile of the writer (-profile) runs from its start:
// the target's 20 s and some.
const writerProfileSeconds = 30

// profileFromStart takes a CPU profile of srv from the moment its pprof endpoint answers.
func (h *harness) profileFromStart(srv *coreDNS, name string, seconds int) error {
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.DialTimeout("tcp", srv.pprofAddr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) || !srv.Running() {
			return srv.failure(fmt.Errorf("no pprof endpoint at %s: %w", srv.pprofAddr, err))
		}
		time.Sleep(5 * time.Millisecond)
	}
	return h.fetchProfile(srv, fmt.Sprintf("profile?seconds=%d", seconds), name, time.Duration(seconds+30)*time.Second)
}

// wCPU is the CPU time each process used from the writer's start until every name was in etcd.
type wCPU struct{ writer, apiserver, etcd time.Duration }

func (c *wCPU) read(writer int, apiserver, etcd []int, apiserver0, etcd0 time.Duration) error {
	var err error
	if c.writer, err = cpuTime(writer); err != nil {
		return err
	}
	if c.apiserver, err = cpuTimes(apiserver); err != nil {
		return err
	}
	if c.etcd, err = cpuTimes(etcd); err != nil {
		return err
	}
	c.apiserver -= apiserver0
	c.etcd -= etcd0
	return nil
}
