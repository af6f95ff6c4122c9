package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/dnsperf"
)

// backend is one way to answer the zone, run by the same ./coredns binary.
type backend struct {
	name  string
	body  string
	mixes []mix
	srv   *coreDNS
}

func (h *harness) perf() dnsperf.Options {
	return dnsperf.Options{Clients: h.opt.clients, Threads: h.opt.threads, Outstanding: h.opt.outstanding,
		Duration: h.opt.duration, Timeout: time.Second, CPU: h.clientCPU}
}

// phaseQ: the four backends on the same records and the same questions. They are started
// one at a time and then stay up, idle while another is measured, so that the rounds can
// interleave them: a load change on this shared machine hits all of them alike.
func (h *harness) phaseQ() error {
	n := h.opt.qrecords
	d := newDataset(n)
	ctx, cancel := h.ctx()
	defer cancel()
	if err := clearPrefix(ctx, h.cli, "/skydns/"); err != nil {
		return err
	}
	start := time.Now()
	if err := loadRecords(ctx, h.cli, d.Records, 8); err != nil {
		return err
	}
	logf("Q: %d records in etcd in %v", len(d.Records), time.Since(start).Round(time.Millisecond))
	hostsFile := filepath.Join(h.runDir, "hosts")
	if err := os.WriteFile(hostsFile, []byte(strings.Join(d.Hosts, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing the hosts file: %w", err)
	}
	inputs := map[string]string{}
	for _, m := range []mix{mixBasic, mixFull} {
		f := filepath.Join(h.runDir, "queries-"+strings.ReplaceAll(strings.ToLower(m.Name), "/", "-")+".txt")
		if err := os.WriteFile(f, []byte(dnsperfInput(d.Queries(m, 20000))), 0o644); err != nil {
			return fmt.Errorf("writing the query file: %w", err)
		}
		inputs[m.Name] = f
	}

	both := []mix{mixBasic, mixFull}
	etcdBody := fmt.Sprintf("etcd {\n    endpoint %s\n}", h.etcd.ClientURL)
	backends := []*backend{
		{name: "gatewaydns", body: fmt.Sprintf("gatewaydns {\n    endpoint %s\n}", h.etcd.ClientURL), mixes: both},
		{name: "etcd", body: etcdBody, mixes: both},
		{name: "etcd+cache", body: "cache\n" + etcdBody, mixes: both},
		{name: "hosts", body: fmt.Sprintf("hosts %s %s {\n    reload 0\n    no_reverse\n}", hostsFile, zone), mixes: []mix{mixBasic}},
	}
	for _, b := range backends {
		srv, took, err := h.start(serverSpec{name: b.name, body: b.body, cpu: h.serverCPU, pprof: h.opt.profile}, 60*time.Second)
		if err != nil {
			return err
		}
		b.srv = srv
		if err := checkBackend(b, d); err != nil {
			return srv.failure(err)
		}
		logf("Q: %s on %s, ready in %v (log %s)", b.name, srv.DNS, took.Round(time.Millisecond), srv.Log)
	}

	q := &qResults{records: len(d.Records), perf: h.perf(), rounds: h.opt.rounds, latRate: map[string]int{}, latFraction: h.opt.latFraction}
	q.pinning = "none"
	if h.serverCPU != "" {
		q.pinning = fmt.Sprintf("CoreDNS and etcd on CPU %s, dnsperf on CPU %s (taskset)", h.serverCPU, h.clientCPU)
	}
	h.res.q = q
	perfLog := filepath.Join(h.runDir, "dnsperf-Q.log")
	for _, m := range both {
		var bs []*backend
		for _, b := range backends {
			if containsMix(b.mixes, m) {
				bs = append(bs, b)
				q.rows = append(q.rows, qRow{mix: m.Name, backend: b.name, rcodes: map[string]int64{}})
			}
		}
		// Warm up (the cache, the Go heaps): one short run each, not counted.
		warm := h.perf()
		warm.Duration = min(2*time.Second, h.opt.duration)
		for _, b := range bs {
			if _, err := runDnsperf(warm, b.srv.DNS, inputs[m.Name], perfLog); err != nil {
				return b.srv.failure(err)
			}
		}
		// Throughput: as many queries as the server answers, round after round, rotating the
		// order.
		for r := range h.opt.rounds {
			for i := range bs {
				b := bs[(i+r)%len(bs)]
				res, err := h.measure(b.srv, inputs[m.Name], perfLog, r == 0, strings.ToLower(m.Name))
				if err != nil {
					return err
				}
				row := q.row(m.Name, b.name)
				row.qpsRounds = append(row.qpsRounds, res.QPS)
				row.satAvg += res.Avg.Seconds() / float64(h.opt.rounds)
				row.lost += res.Lost
				row.sent += res.Sent
				for k, v := range res.Rcodes {
					row.rcodes[k] += v
				}
				logf("Q: %-10s %-16s round %d: %8.0f qps, mean %.2f ms, lost %d", b.name, m.Name, r+1, res.QPS, res.Avg.Seconds()*1000, res.Lost)
			}
		}
		slowest := math.Inf(1)
		for _, b := range bs {
			row := q.row(m.Name, b.name)
			row.qps = median(row.qpsRounds)
			slowest = min(slowest, row.qps)
		}
		// Latency: the same fixed rate for all, below the slowest one's throughput, so that
		// the percentiles show the time a question takes rather than the time it queues.
		rate := max(int(slowest*h.opt.latFraction), 100)
		q.latRate[m.Name] = rate
		lp := h.perf()
		lp.MaxQPS, lp.Verbose, lp.Duration = rate, true, max(h.opt.duration/2, time.Second)
		samples := map[string][]float64{}
		for r := range h.opt.rounds {
			for i := range bs {
				b := bs[(i+r)%len(bs)]
				res, err := runDnsperf(lp, b.srv.DNS, inputs[m.Name], perfLog)
				if err != nil {
					return b.srv.failure(err)
				}
				samples[b.name] = append(samples[b.name], durations(res.Latencies)...)
				row := q.row(m.Name, b.name)
				row.lost += res.Lost
				row.sent += res.Sent
			}
		}
		for _, b := range bs {
			row := q.row(m.Name, b.name)
			row.lat = summarize(samples[b.name])
			logf("Q: %-10s %-16s %8.0f qps (median); at %d qps: p50 %.3f ms, p99 %.3f ms", b.name, m.Name, row.qps, rate, row.lat.p50*1000, row.lat.p99*1000)
		}
	}
	for _, b := range backends {
		b.srv.stop()
	}
	return nil
}

// measure is a throughput run of dnsperf against srv. With -profile and profile, a CPU profile
// of srv over most of the run is saved too, as cpu-<server>-<label>.pprof.
func (h *harness) measure(srv *coreDNS, input, perfLog string, profile bool, label string) (dnsperf.Result, error) {
	return h.measureFor(srv, input, perfLog, profile, label, h.opt.duration)
}

// measureFor is measure with a run of d.
func (h *harness) measureFor(srv *coreDNS, input, perfLog string, profile bool, label string, d time.Duration) (dnsperf.Result, error) {
	var profiled chan error
	if h.opt.profile && profile {
		profiled = make(chan error, 1)
		go func() {
			time.Sleep(500 * time.Millisecond)
			profiled <- h.fetchProfile(srv, fmt.Sprintf("profile?seconds=%d", max(int(d.Seconds())-1, 1)),
				fmt.Sprintf("cpu-%s-%s", srv.Name, label), d+30*time.Second)
		}()
	}
	opts := h.perf()
	opts.Duration = d
	res, err := runDnsperf(opts, srv.DNS, input, perfLog)
	if err != nil {
		return res, srv.failure(err)
	}
	if profiled != nil {
		return res, <-profiled
	}
	return res, nil
}

// fetchProfile saves the server's /debug/pprof/<what> into the run directory as <name>.pprof.
func (h *harness) fetchProfile(srv *coreDNS, what, name string, timeout time.Duration) error {
	resp, err := (&http.Client{Timeout: timeout}).Get(fmt.Sprintf("http://%s/debug/pprof/%s", srv.pprofAddr, what))
	if err != nil {
		return fmt.Errorf("%s: profile: %w", srv.Name, err)
	}
	defer resp.Body.Close()
	file := profileFile(h.runDir, name)
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("%s: profile: %w", srv.Name, err)
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		return fmt.Errorf("%s: profile: %w", srv.Name, err)
	}
	logf("profile of %s: go tool pprof -top %s", srv.Name, file)
	return nil
}

// profileFile is where fetchProfile saves the profile called name.
func profileFile(dir, name string) string {
	return filepath.Join(dir, strings.NewReplacer("/", "-", "+", "-", " ", "-").Replace(name)+".pprof")
}

func containsMix(ms []mix, m mix) bool {
	for _, x := range ms {
		if x.Name == m.Name {
			return true
		}
	}
	return false
}

// checkBackend asks a few questions of the mixes the backend runs, so that a benchmark never
// measures a server that answers wrong.
func checkBackend(b *backend, d *dataset) error {
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	r, err := ask(c, b.srv.DNS, d.A[0], dns.TypeA)
	if err != nil {
		return err
	}
	if !answersA(r, ipv4(0)) {
		return fmt.Errorf("%s does not answer %s A with %s:\n%v", b.name, d.A[0], ipv4(0), r)
	}
	if !containsMix(b.mixes, mixFull) {
		return nil
	}
	target := d.A[0]
	r, err = ask(c, b.srv.DNS, d.CNAME[0], dns.TypeA)
	if err != nil {
		return err
	}
	if !answersA(r, ipv4(0)) {
		return fmt.Errorf("%s does not follow the CNAME %s -> %s:\n%v", b.name, d.CNAME[0], target, r)
	}
	r, err = ask(c, b.srv.DNS, d.SRV[0], dns.TypeSRV)
	if err != nil {
		return err
	}
	if len(r.Answer) == 0 {
		return fmt.Errorf("%s has no SRV answer for %s:\n%v", b.name, d.SRV[0], r)
	}
	r, err = ask(c, b.srv.DNS, d.Subtree[0], dns.TypeA)
	if err != nil {
		return err
	}
	if len(r.Answer) != 4 {
		return fmt.Errorf("%s answers %s with %d records, want the 4 of its subtree:\n%v", b.name, d.Subtree[0], len(r.Answer), r)
	}
	return nil
}
