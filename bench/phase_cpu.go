package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/benchdata"
	"github.com/gatewaydns/gatewaydns/internal/dnsperf"
)

// phaseA: what one question costs gatewaydns, side by side with the authoritative servers its
// users compare it with (issue 37). Knot and NSD (Debian's packages, one worker each) serve the
// dataset from a zone file; CoreDNS serves it with hosts, with the floor plugin (bench/floor:
// packed replies, what CoreDNS's own server costs), and with gatewaydns in several Corefiles,
// before and after the change measured (-a-baseline, built from its commit). Every server is
// pinned to the server CPU, dnsperf to the other; the servers start one at a time, stay up, and
// the rounds interleave them. The measure is the CPU time the server's processes used (user and
// system, /proc/PID/stat) over a throughput run, per answered question: on a shared machine it
// moves less than the QPS, which the neighbours' load on either CPU moves.
func (h *harness) phaseA() error {
	n := h.opt.anames
	d, loaded, err := h.loadDataset("bencha", n)
	if err != nil {
		return err
	}
	a := &aResults{records: len(d.Records), rounds: h.opt.rounds, perf: h.perf(), latQPS: h.opt.aLatQPS, started: loadAvg()}
	h.res.a = a
	a.pinning = "none"
	if h.serverCPU != "" {
		a.pinning = fmt.Sprintf("each server on CPU %s, dnsperf on CPU %s (taskset)", h.serverCPU, h.clientCPU)
	}
	logf("A: %d records in etcd in %v", len(d.Records), loaded.Round(time.Millisecond))

	files, err := h.aFiles(d)
	if err != nil {
		return err
	}
	a.allocs, err = h.allocsPerQuestion()
	if err != nil {
		a.notes = append(a.notes, "allocations per question not measured: "+firstLine(err.Error()))
		logf("A: allocations per question not measured: %v", err)
	}
	specs, err := h.aServers(files, a)
	if err != nil {
		return err
	}
	var servers []*authServer
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	perfLog := filepath.Join(h.runDir, "dnsperf-A.log")
	for _, sp := range specs {
		s, err := sp.start()
		if err != nil {
			return fmt.Errorf("%s: %w", sp.name, err)
		}
		s.name = sp.name
		servers = append(servers, s)
		if err := checkAuth(s, d, sp.nxRcode); err != nil {
			return err
		}
		// Warm up: every question of the file once, so that what is measured is a server that
		// has answered each name before (a cache, packed replies), as one in service has.
		warm := h.perf()
		warm.Duration, warm.Runs = 2*time.Minute, 1
		if _, err := runDnsperf(warm, s.DNS, files.queries, perfLog); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		a.rows = append(a.rows, aRow{name: sp.name, what: sp.what, rcodes: map[string]int64{}})
		logf("A: %s answers on %s", s.name, s.DNS)
	}

	for r := range h.opt.rounds {
		for i := range servers {
			k := (i + r) % len(servers)
			row := &a.rows[k]
			run, err := h.aThroughput(servers[k], files.queries, perfLog, r == 0 && specs[k].profile)
			if err != nil {
				return err
			}
			row.cpuPerQ = append(row.cpuPerQ, run.cpuPerQ)
			row.qps = append(row.qps, run.res.QPS)
			row.cpuBusy = append(row.cpuBusy, run.busy)
			row.steal = append(row.steal, run.steal)
			row.answered += run.res.Completed
			row.sent += run.res.Sent
			row.lost += run.res.Lost
			for c, v := range run.res.Rcodes {
				row.rcodes[c] += v
			}
			if run.profile != "" {
				row.profile = run.profile
				row.stack, row.stackErr = stackShare(run.profile)
				row.own, row.ownErr = ownGrowth(run.profile)
			}
			logf("A: %-34s round %d: %6.2f us/question, %7.0f qps, CPU %s busy %.0f%% (steal %.1f%%)", row.name, r+1,
				run.cpuPerQ*1e6, run.res.QPS, h.serverCPU, 100*run.busy, 100*run.steal)
		}
	}
	samples := make([]sample, len(servers))
	lp := h.perf()
	lp.MaxQPS, lp.Verbose, lp.Duration = h.opt.aLatQPS, true, max(h.opt.duration/2, time.Second)
	for r := range h.opt.rounds {
		for i := range servers {
			k := (i + r) % len(servers)
			res, err := runDnsperf(lp, servers[k].DNS, files.queries, perfLog)
			if err != nil {
				return fmt.Errorf("%s: %w", servers[k].name, err)
			}
			samples[k].add(res, lp.Timeout)
		}
	}
	for k := range servers {
		row := &a.rows[k]
		row.lat, row.latLost, row.latSent = summarize(samples[k].lat), samples[k].lost, samples[k].sent
		logf("A: %-34s %6.2f us/question (median), %7.0f qps; at %d qps p50 %s, p99 %s; stack growth %s (%s in gatewaydns's frames)", row.name,
			median(row.cpuPerQ)*1e6, median(row.qps), h.opt.aLatQPS, ms(row.lat.p50), ms(row.lat.p99), shareString(row.stack, row.stackErr), shareString(row.own, row.ownErr))
	}
	a.ended = loadAvg()
	return nil
}

// mixAuth is issue 37's question mix: 80% A, 10% AAAA, 10% names that do not exist.
var mixAuth = benchdata.Mix{Name: "80% A, 10% AAAA, 10% NXDOMAIN", Parts: []benchdata.MixPart{{What: "a", Weight: 80}, {What: "aaaa", Weight: 10}, {What: "nx", Weight: 10}}}

// aFilesSet is what phase A's servers read.
type aFilesSet struct {
	zone, hosts, queries string // the zone file's text; the hosts file; the question file
}

func (h *harness) aFiles(d *dataset) (aFilesSet, error) {
	var f aFilesSet
	var err error
	if f.zone, err = zoneFile(d); err != nil {
		return f, err
	}
	f.hosts = filepath.Join(h.runDir, "hosts-a")
	if err := os.WriteFile(f.hosts, []byte(strings.Join(d.Hosts, "\n")+"\n"), 0o644); err != nil {
		return f, err
	}
	// As many questions as names, so that the servers are asked the whole zone, evenly.
	f.queries = filepath.Join(h.runDir, "queries-a.txt")
	if err := os.WriteFile(f.queries, []byte(dnsperfInput(d.Queries(mixAuth, max(len(d.Records), 20000)))), 0o644); err != nil {
		return f, err
	}
	return f, nil
}

// aServerSpec is one server of phase A, not started yet.
type aServerSpec struct {
	id, name, what string
	nxRcode        int  // what it answers a name that does not exist
	profile        bool // take a CPU profile in the first round (CoreDNS, with the pprof plugin)
	start          func() (*authServer, error)
}

// aServers lists the servers that -a-servers asks for, in the order they start.
func (h *harness) aServers(f aFilesSet, a *aResults) ([]aServerSpec, error) {
	// The stanza before the change; inside CoreDNS (the batched path off, as it is in a block
	// where something in front must see each question); with the batched path.
	stanza := fmt.Sprintf("gatewaydns {\n    endpoint %s\n    path /bencha\n}", h.etcd.ClientURL)
	inside := fmt.Sprintf("gatewaydns {\n    endpoint %s\n    path /bencha\n    udp-batch off\n}", h.etcd.ClientURL)
	batched := fmt.Sprintf("gatewaydns {\n    endpoint %s\n    path /bencha\n    udp-batch\n}", h.etcd.ClientURL)
	var floor, baseline string
	coredns := func(id, body string, bin *string, metrics, profile bool) func() (*authServer, error) {
		return func() (*authServer, error) {
			spec := serverSpec{name: "a-" + id, body: body, cpu: h.serverCPU, metrics: metrics, pprof: profile}
			if bin != nil {
				spec.bin = *bin
			}
			srv, _, err := h.start(spec, readyTimeout(h.opt.anames))
			if err != nil {
				return nil, err
			}
			return &authServer{DNS: srv.DNS, p: srv.proc, srv: srv}, nil
		}
	}
	central := func(text string) (string, bool, error) { return shippedBlock(text, stanza) }
	nowCentral, err := readCentral(h.root, "", centralCorefile)
	if err != nil {
		return nil, err
	}
	nowBody, nowMetrics, err := central(nowCentral)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", centralCorefile, err)
	}
	overlayText, err := readCentral(h.root, "", overlayCorefile)
	if err != nil {
		return nil, err
	}
	overlayBody, overlayMetrics, err := central(overlayText)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", overlayCorefile, err)
	}
	var beforeBody string
	var beforeMetrics bool
	all := []aServerSpec{
		{id: "knot", name: "Knot", what: "knotd, 1 UDP worker", nxRcode: dns.RcodeNameError,
			start: func() (*authServer, error) { return h.startPrimary("knot", f.zone) }},
		{id: "nsd", name: "NSD", what: "nsd, server-count 1", nxRcode: dns.RcodeNameError,
			start: func() (*authServer, error) { return h.startPrimary("nsd", f.zone) }},
		{id: "floor", name: "CoreDNS floor (packed replies)", what: "`floor` (bench/floor)", nxRcode: dns.RcodeNameError,
			start: coredns("floor", fmt.Sprintf("floor %s %s", f.hosts, zone), &floor, false, false)},
		{id: "hosts", name: "CoreDNS hosts", what: "`hosts` (no SOA: SERVFAIL for a name it lacks)", nxRcode: dns.RcodeServerFailure,
			start: coredns("hosts", fmt.Sprintf("hosts %s %s {\n    reload 0\n    no_reverse\n}", f.hosts, zone), nil, false, false)},
		{id: "before-minimal", name: "gatewaydns minimal, before", what: "the stanza alone", nxRcode: dns.RcodeNameError, profile: true,
			start: func() (*authServer, error) { return coredns("before-minimal", stanza, &baseline, false, true)() }},
		{id: "before-central", name: "gatewaydns central, before", what: "", nxRcode: dns.RcodeNameError, profile: true,
			start: func() (*authServer, error) {
				return coredns("before-central", beforeBody, &baseline, beforeMetrics, true)()
			}},
		{id: "minimal", name: "gatewaydns minimal", what: "the stanza alone, `udp-batch off`: inside CoreDNS's server", nxRcode: dns.RcodeNameError, profile: true,
			start: coredns("minimal", inside, nil, false, true)},
		{id: "prometheus", name: "gatewaydns + prometheus", what: "`udp-batch off`", nxRcode: dns.RcodeNameError,
			start: coredns("prometheus", inside, nil, true, false)},
		{id: "log", name: "gatewaydns + log + prometheus", what: "`log`", nxRcode: dns.RcodeNameError,
			start: coredns("log", "log\n"+inside, nil, true, false)},
		{id: "log-denial", name: "gatewaydns + log denial/error + prometheus", what: "`log { class denial error }`", nxRcode: dns.RcodeNameError,
			start: coredns("log-denial", "log {\n    class denial error\n}\n"+inside, nil, true, false)},
		{id: "cache", name: "gatewaydns + cache + prometheus", what: "`cache`, `udp-batch off`", nxRcode: dns.RcodeNameError,
			start: coredns("cache", "cache\n"+inside, nil, true, false)},
		{id: "central", name: "gatewaydns central", what: "", nxRcode: dns.RcodeNameError, profile: true,
			start: coredns("central", nowBody, nil, nowMetrics, true)},
		{id: "overlay", name: "gatewaydns central overlay", what: "", nxRcode: dns.RcodeNameError,
			start: coredns("overlay", overlayBody, nil, overlayMetrics, false)},
		{id: "loadbalance", name: "gatewaydns + loadbalance + prometheus", what: "`loadbalance`", nxRcode: dns.RcodeNameError,
			start: coredns("loadbalance", stanza+"\nloadbalance", nil, true, false)},
		{id: "batched", name: "gatewaydns batched UDP", what: "the stanza with `udp-batch` (what the stanza alone does by default)", nxRcode: dns.RcodeNameError, profile: true,
			start: coredns("batched", batched, nil, false, true)},
		{id: "batched-prometheus", name: "gatewaydns batched UDP + prometheus", what: "`udp-batch`, `prometheus`", nxRcode: dns.RcodeNameError,
			start: coredns("batched-prometheus", batched, nil, true, false)},
	}
	want := strings.Split(h.opt.aServers, ",")
	var out []aServerSpec
	for _, s := range all {
		for _, w := range want {
			if strings.TrimSpace(w) == s.id || w == "all" {
				out = append(out, s)
				break
			}
		}
	}
	for _, s := range out {
		switch s.id {
		case "floor":
			if floor, err = h.buildFloor(); err != nil {
				return nil, err
			}
		case "before-minimal", "before-central":
			if baseline == "" {
				if baseline, a.baseline, err = h.buildBaseline(h.opt.aBaseline); err != nil {
					return nil, err
				}
				text, err := readCentral(h.root, a.baseline, centralCorefile)
				if err != nil {
					return nil, err
				}
				if beforeBody, beforeMetrics, err = central(text); err != nil {
					return nil, fmt.Errorf("%s of %s: %w", centralCorefile, a.baseline, err)
				}
				a.beforeCentral = centralPlugins(beforeBody, beforeMetrics)
			}
		case "central":
			a.nowCentral = centralPlugins(nowBody, nowMetrics)
		}
	}
	for i := range out {
		if out[i].id == "overlay" {
			out[i].what = centralPlugins(overlayBody, overlayMetrics) + " (" + overlayCorefile + ")"
		}
	}
	for i := range out {
		switch out[i].id {
		case "before-central":
			out[i].what = a.beforeCentral
		case "central":
			out[i].what = a.nowCentral
		case "prometheus", "log", "log-denial", "cache", "loadbalance":
			if out[i].what == "" {
				out[i].what = "`prometheus`"
			} else {
				out[i].what += ", `prometheus`"
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-a-servers %q names no server", h.opt.aServers)
	}
	return out, nil
}

// The shipped Corefiles of the central server: the example, and the Kustomize overlay's.
const (
	centralCorefile = "corefile.d/central.Corefile"
	overlayCorefile = "deploy/overlays/central/Corefile"
)

// readCentral is the shipped Corefile file: of the working tree, or of commit rev.
func readCentral(root, rev, file string) (string, error) {
	if rev == "" {
		b, err := os.ReadFile(filepath.Join(root, file))
		return string(b), err
	}
	b, err := exec.Command("git", "-C", root, "show", rev+":"+file).Output()
	if err != nil {
		return "", fmt.Errorf("git show %s:%s: %w", rev, file, err)
	}
	return string(b), nil
}

// centralPlugins says which plugins of a shipped block run in front of gatewaydns.
func centralPlugins(body string, metrics bool) string {
	var names []string
	for _, l := range strings.Split(body, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "}" && !strings.HasPrefix(l, " ") && f[0] != "gatewaydns" {
			if strings.Contains(l, "{") {
				names = append(names, "`"+strings.TrimSuffix(strings.TrimSpace(l), " {")+" {...}`")
				continue
			}
			names = append(names, "`"+strings.TrimSpace(l)+"`")
		}
	}
	if metrics {
		names = append(names, "`prometheus`")
	}
	if len(names) == 0 {
		return "the stanza alone"
	}
	return strings.Join(names, ", ")
}

// checkAuth asks a server for an A name, an AAAA name and a name that does not exist, so that
// no server is measured answering wrong.
func checkAuth(s *authServer, d *dataset, nxRcode int) error {
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	for _, q := range []struct {
		name  string
		qtype uint16
		ip    string
	}{{d.A[0], dns.TypeA, ipv4(0)}, {d.AAAA[0], dns.TypeAAAA, benchdata.IPv6(0)}} {
		r, err := ask(c, s.DNS, q.name, q.qtype)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		if !answersA(r, q.ip) {
			return fmt.Errorf("%s does not answer %s %s with %s:\n%v", s.name, q.name, dns.TypeToString[q.qtype], q.ip, r)
		}
	}
	r, err := ask(c, s.DNS, d.NX[0], dns.TypeA)
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	if r.Rcode != nxRcode {
		return fmt.Errorf("%s answers %s with %s, want %s:\n%v", s.name, d.NX[0], dns.RcodeToString[r.Rcode], dns.RcodeToString[nxRcode], r)
	}
	return nil
}

// aRun is one throughput run of phase A.
type aRun struct {
	res         dnsperf.Result
	cpuPerQ     float64 // seconds of the server's CPU time per answered question
	busy, steal float64 // the server CPU's busy and stolen share of the run, whoever used it
	profile     string  // the CPU profile's file, when one was taken
}

// aThroughput runs dnsperf as fast as the server answers, reading the server's CPU time and
// the server CPU's counters before and after; with profile, a CPU profile of a CoreDNS server
// over the run.
func (h *harness) aThroughput(s *authServer, input, perfLog string, profile bool) (aRun, error) {
	var run aRun
	wait := func() error { return nil }
	label := "a"
	if profile && s.srv != nil && s.srv.pprofAddr != "" {
		wait = h.profileRunAlways(s.srv, h.opt.duration, label)
		run.profile = profileFile(h.runDir, "cpu-"+s.srv.Name+"-"+label)
	}
	cpu0, err := s.cpu()
	if err != nil {
		return run, err
	}
	stat0, err := readCPUStat(h.serverCPU)
	if err != nil {
		return run, err
	}
	opts := h.perf()
	run.res, err = runDnsperf(opts, s.DNS, input, perfLog)
	if err != nil {
		return run, fmt.Errorf("%s: %w", s.name, err)
	}
	cpu1, err := s.cpu()
	if err != nil {
		return run, err
	}
	stat1, err := readCPUStat(h.serverCPU)
	if err != nil {
		return run, err
	}
	run.busy, run.steal = stat1.since(stat0)
	run.cpuPerQ = ratio((cpu1 - cpu0).Seconds(), float64(run.res.Completed))
	if err := wait(); err != nil {
		return run, err
	}
	return run, nil
}

// profileRunAlways is profileRun without -profile: phase A always profiles its gatewaydns
// servers, for the share of stack growth.
func (h *harness) profileRunAlways(srv *coreDNS, d time.Duration, label string) (wait func() error) {
	profiled := make(chan error, 1)
	go func() {
		profiled <- h.fetchProfile(srv, fmt.Sprintf("profile?seconds=%d", max(int(d.Seconds())-1, 1)),
			"cpu-"+srv.Name+"-"+label, d+30*time.Second)
	}()
	return func() error { return <-profiled }
}

// loadAvg is /proc/loadavg's first three fields.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
