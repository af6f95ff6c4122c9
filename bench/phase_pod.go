package main

import (
	"context"
	"fmt"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// podPath is phase B's etcd prefix (`path /benchb`): the zone's records of other owners, and
// what the pod publishes.
const podPath = "benchb"

// podOwner is the owner the pod publishes as.
const podOwner = "bench-b"

// bResults: phase B, one pod that publishes and serves, sized against deploy/.
type bResults struct {
	routes, records int // routes the pod publishes; records of other owners in the zone
	shipped         shippedMemory
	readme          float64 // MiB: deploy/README's figure for such a pod
	readmeErr       string  // why there is none
	ready           time.Duration
	published       time.Duration // from the process start to every route's name in etcd
	steady          time.Duration // how long the pod ran on after, transfers going on
	axfrNice        int           // of the AXFR client
	transfers       []xfer        // by the AXFR client, back to back from ready to the end
	final           xfer          // one more, checked to hold every name of the zone
	answers         []string      // the questions asked at the end, and their answers
	cpu             time.Duration // the pod's, over the phase
	rss             []rssSample
	peakRSS         int64 // VmHWM: the largest RSS, between samples too
	steadyRSS       int64 // the median sample of the steady window
	steadyRSSMax    int64
	gc              []gcCycle
}

// phaseB: a pod that does both. -routes HTTPRoutes in the kube-apiserver (phase W's) and a zone
// of -pod-records records of other owners in etcd; one gatewaydns stanza that publishes the
// routes into the zone and answers the zone, with `transfer { to * }`, run with the GOMEMLIMIT
// deploy/ ships. From its ready, an AXFR client transfers the zone back to back, while the pod
// publishes and for -pod-steady after the last name is in etcd. Its RSS is sampled throughout
// (and its peak read from VmHWM), its heap read from its gctrace; the peak is held to the limit
// deploy/ ships and to deploy/README's Memory table.
func (h *harness) phaseB() error {
	shipped, err := readShippedMemory(h.root)
	if err != nil {
		return err
	}
	b := &bResults{shipped: shipped, steady: h.opt.podSteady, axfrNice: h.opt.axfrNice}
	h.res.b = b
	if b.readme, err = readmeMiB(h.root, podReadmeRow); err != nil {
		b.readmeErr = err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	k, rs, err := h.clusterRoutes(ctx)
	if err != nil {
		return err
	}
	b.routes = rs.n
	// Clears what an earlier run's pod published there too: this one publishes from cold.
	d, loaded, err := h.loadDataset(podPath, h.opt.podRecords)
	if err != nil {
		return err
	}
	b.records = len(d.Records)
	others := datasetNames(d)
	logf("B: %d records of other owners in etcd in %v; %d routes in the kube-apiserver", b.records, loaded.Round(time.Millisecond), b.routes)

	pod, sampler, err := h.startPod(b, k)
	if pod != nil {
		defer pod.stop()
		defer sampler.finish()
	}
	if err != nil {
		return err
	}
	if err := h.publishWhileTransferring(ctx, pod, b, others); err != nil {
		return err
	}
	if err := b.check(pod.DNS, rs, others); err != nil {
		return pod.failure(err)
	}
	return b.read(pod, sampler)
}

// startPod starts the pod with the shipped GOMEMLIMIT, samples its RSS from its start, and
// waits until it is ready and answers.
func (h *harness) startPod(b *bResults, k *kubeEnv) (*coreDNS, *rssSampler, error) {
	body := fmt.Sprintf("transfer {\n    to *\n}\ngatewaydns {\n    endpoint %s\n    path /%s\n    owner %s\n    kubeconfig %s\n    domain-filter %s\n}",
		h.etcd.ClientURL, podPath, podOwner, k.kube.KubeconfigFile, routeDomain)
	pod, err := h.startCoreDNS(serverSpec{name: "pod-b", metrics: true, body: body, env: []string{gcTraceEnv, "GOMEMLIMIT=" + b.shipped.goMemLimit}})
	if err != nil {
		return nil, nil, err
	}
	sampler := sampleRSS(pod.pid(), pod.started, 100*time.Millisecond)
	if b.ready, err = pod.waitReady(5 * time.Minute); err != nil {
		return pod, sampler, err
	}
	if err := pod.waitListening(10 * time.Second); err != nil {
		return pod, sampler, err
	}
	logf("B: the pod (GOMEMLIMIT %s) ready in %v (log %s)", b.shipped.goMemLimit, b.ready.Round(time.Millisecond), pod.Log)
	return pod, sampler, nil
}

// publishWhileTransferring runs the AXFR client from now until the pod has published every
// route and run on for the steady window, and keeps its transfers.
func (h *harness) publishWhileTransferring(ctx context.Context, pod *coreDNS, b *bResults, others map[string]bool) error {
	client, err := h.startAXFRLoop(pod.DNS, "axfr-client-b", others)
	if err != nil {
		return err
	}
	if b.published, err = h.waitPublished(ctx, pod, b.routes); err == nil {
		logf("B: %d names published %v after the pod's start; transfers go on for %v", b.routes, b.published.Round(time.Millisecond), b.steady)
		err = pod.runFor(b.steady)
	}
	ts, terr := client.finish(60 * time.Second)
	b.transfers = ts
	switch {
	case err != nil:
		return err
	case terr != nil:
		return pod.failure(fmt.Errorf("AXFR: %w", terr))
	}
	return nil
}

// waitPublished waits until etcd holds a name of the pod's for each of n routes, and returns
// the time from the pod's start.
func (h *harness) waitPublished(ctx context.Context, pod *coreDNS, n int) (time.Duration, error) {
	prefix := record.NamePath(podPath, routeDomain) + "/"
	deadline := time.Now().Add(10 * time.Minute)
	for {
		got, _, err := countPrefix(ctx, h.cli, prefix)
		if err != nil {
			return 0, err
		}
		if got >= int64(n) {
			return time.Since(pod.started), nil
		}
		if !pod.Running() {
			return 0, pod.failure(errExited)
		}
		if time.Now().After(deadline) {
			return 0, pod.failure(fmt.Errorf("%d of %d names in etcd after 10m", got, n))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runFor lets the process run for d, and fails as soon as it exits.
func (c *coreDNS) runFor(d time.Duration) error {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if !c.Running() {
			return c.failure(errExited)
		}
		time.Sleep(min(time.Second, time.Until(end)))
	}
	return nil
}

// check asks the pod for the first and last names it published and one of another owner's,
// and transfers the zone once more: it must hold every name, the pod's own and the others'.
func (b *bResults) check(server string, rs *routeSet, others map[string]bool) error {
	client := &dns.Client{Net: "udp", Timeout: time.Second}
	for _, q := range []struct{ name, ip string }{
		{routeHostname(0), rs.address(0)}, {routeHostname(rs.n - 1), rs.address(rs.n - 1)}, {"h0.bench." + zone, ipv4(0)},
	} {
		r, err := ask(client, server, q.name, dns.TypeA)
		if err != nil {
			return err
		}
		if !answersA(r, q.ip) {
			return fmt.Errorf("%s A: %s, answers %v; want %s", q.name, dns.RcodeToString[r.Rcode], r.Answer, q.ip)
		}
		b.answers = append(b.answers, q.name+" A "+q.ip)
	}
	want := make(map[string]bool, len(others)+rs.n)
	for name := range others {
		want[name] = true
	}
	for i := range rs.n {
		want[dns.Fqdn(routeHostname(i))] = true
	}
	var err error
	if b.final, err = axfr(server, zone, want); err != nil {
		return fmt.Errorf("the AXFR after the steady run: %w", err)
	}
	return nil
}

// read takes what the phase measured from the pod, before it stops: its peak RSS, its samples,
// its collections and its CPU time.
func (b *bResults) read(pod *coreDNS, sampler *rssSampler) error {
	var err error
	if b.peakRSS, err = peakRSSBytes(pod.pid()); err != nil {
		return err
	}
	if b.cpu, err = cpuTime(pod.pid()); err != nil {
		return err
	}
	b.rss = sampler.finish()
	b.steadyRSS, b.steadyRSSMax, _ = rssBetween(b.rss, b.published, b.published+b.steady)
	if b.gc, err = gcCycles(pod.Log); err != nil {
		return err
	}
	live, _, largestHeap, _ := heapBetween(b.gc, 0, b.published+b.steady)
	logf("B: peak RSS %.0f MiB (limit %s), steady %.0f MiB (max %.0f); live heap median %.0f MiB, largest heap %.0f MiB; %d AXFRs, CPU %v",
		mb(b.peakRSS), b.shipped.limitText, mb(b.steadyRSS), mb(b.steadyRSSMax), mb(live), mb(largestHeap), len(b.transfers), b.cpu.Round(10*time.Millisecond))
	return nil
}
