// Command bench measures gatewaydns against its peers on this machine, in one run: query
// throughput and latency against the stock etcd plugin (with and without cache) and the hosts
// plugin (phase Q), scale to 1M records (S), query latency while etcd changes 10k records a
// second and the rate the index applies changes (C), propagation from etcd and from a Gateway
// status update, against external-dns (P), the writer publishing 100k routes from cold (W),
// query latency while the zone of 100k records is transferred by AXFR, back to back (X), query
// throughput with a steering policy on every name against none (T), the
// size of an IXFR after a change of one record in a zone of 1M names (I), and the health
// checker at 10k checked addresses, its interval and its cost to the query latency (H). It
// writes bench/results/<date>.md and .svg. `make bench` runs it; see README.md, "Benchmarks".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/secondary"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

type options struct {
	phases       string
	axfrNice     int
	duration     time.Duration
	rounds       int
	qrecords     int
	scale        []int
	changes      int
	crecords     int
	applyChanges int
	xdnsChanges  int
	routes       int
	writerLimit  string // phase W: the writer's GOMEMLIMIT
	podRecords   int
	podSteady    time.Duration
	xrecords     int
	inames       []int
	rnames       int
	secondaries  bool
	secRate      int
	secDuration  time.Duration
	clients      int
	threads      int
	outstanding  int
	latFraction  float64
	pin          bool
	externalDNS  bool
	profile      bool
	out          string
	anames       int
	aLatQPS      int
	aServers     string
	aBaseline    string
	tnames       int
	haddrs       int
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.phases, "phases", strings.Join(allPhases, ","), "phases to run: A (CPU per question against Knot and NSD), Q (queries), S (scale), C (churn), P (propagation), W (writer), X (zone transfers), I (IXFR size), B (a pod that publishes and serves), T (steering policies on every name), H (health checks of 10k addresses beside the query path)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "length of each throughput run; latency runs take half")
	fs.IntVar(&o.rounds, "rounds", 3, "phases Q, S, C, X and H: rounds over the servers or conditions (interleaved; the median round counts)")
	fs.IntVar(&o.qrecords, "qrecords", 10000, "phase Q: records in etcd")
	scale := fs.String("scale", "1000,10000,100000,1000000", "phase S: record counts")
	fs.IntVar(&o.changes, "changes", 200, "phase P: changes measured per path")
	fs.IntVar(&o.xdnsChanges, "xdns-changes", 10, "phase P: changes measured through external-dns (about 6s each)")
	fs.IntVar(&o.crecords, "crecords", 100000, "phase C: records in etcd, changed at 10k a second while queries are measured")
	fs.IntVar(&o.applyChanges, "apply-changes", 200000, "phase C: changes written while the server is stopped, to time how fast it applies them")
	fs.IntVar(&o.routes, "routes", 100000, "phases W and B: HTTPRoutes published from cold")
	fs.StringVar(&o.writerLimit, "writer-memlimit", "", "phase W: the writer's GOMEMLIMIT, e.g. 320MiB as deploy/ sets it (none when empty)")
	fs.IntVar(&o.podRecords, "pod-records", 100000, "phase B: records of other owners in the zone the pod serves, besides the -routes names it publishes into it")
	fs.DurationVar(&o.podSteady, "pod-steady", 30*time.Second, "phase B: how long the pod runs on, transferring the zone, after its last name is published")
	fs.IntVar(&o.xrecords, "xrecords", 100000, "phase X: records in etcd, transferred by AXFR while queries are measured")
	inames := fs.String("inames", "1000000", "phase I: names in the zone (comma-separated sizes), one record of which changes before the IXFR")
	fs.IntVar(&o.rnames, "rnames", 100000, "phase I: names in the zone of the restarts (a replica restarts, then two behind one address, with Knot and NSD as secondaries); 0 skips them")
	fs.BoolVar(&o.secondaries, "secondaries", true, "phase X: a third condition, Knot and NSD following the zone as secondaries while it changes (apt-get install knot nsd; `make bench` does)")
	fs.IntVar(&o.secRate, "secondaries-rate", 100, "phase X: changes a second while the secondaries follow")
	fs.DurationVar(&o.secDuration, "secondaries-duration", time.Minute, "phase X: length of each latency run while the secondaries follow")
	fs.IntVar(&o.clients, "c", 8, "dnsperf -c")
	fs.IntVar(&o.threads, "T", 2, "dnsperf -T")
	fs.IntVar(&o.outstanding, "q", 200, "dnsperf -q")
	fs.Float64Var(&o.latFraction, "latency-load", 0.5, "phases Q, C, X and H: latency runs send this fraction of the slowest backend's throughput")
	fs.BoolVar(&o.pin, "pin", true, "pin servers and etcd to CPU 0 and dnsperf to CPU 1 (taskset), on a machine with 2 or more CPUs")
	fs.BoolVar(&o.externalDNS, "external-dns", true, "phase P: build (once, into bin/) and measure external-dns v0.21.0")
	fs.BoolVar(&o.profile, "profile", false, "Q, S and T: a CPU profile of each server during its first throughput run; H: of each server during its first latency run; S: a heap profile of each server after its last; C and X: a CPU profile during the first latency run with changes or transfers; W: a CPU profile of the writer from its start and a heap profile once it published (pprof plugin), into .cache/bench/run/")
	fs.IntVar(&o.axfrNice, "axfr-nice", 10, "phase X: the nice value of the AXFR client, which shares a CPU with dnsperf (see axfr_client.go)")
	fs.StringVar(&o.out, "out", "bench/results", "directory of the report and chart")
	fs.IntVar(&o.anames, "anames", 100000, "phase A: records in the zone that every server answers")
	fs.IntVar(&o.aLatQPS, "a-latency-qps", 5000, "phase A: the fixed rate of the latency runs")
	fs.StringVar(&o.aServers, "a-servers", "all", "phase A: the servers to measure (all, or a comma-separated list of knot, nsd, floor, hosts, before-minimal, before-central, minimal, prometheus, log, log-denial, cache, loadbalance, central, overlay, batched, batched-prometheus)")
	fs.IntVar(&o.tnames, "tnames", 10000, "phase T: names, each of two owners with two addresses, per condition")
	fs.IntVar(&o.haddrs, "haddrs", 10000, "phase H: health-checked addresses (two owners of a name, one address each), all in 127.0.0.0/8")
	fs.StringVar(&o.aBaseline, "a-baseline", aBaselineRev, "phase A: the commit whose ./cmd/coredns the before servers run (built once into .cache/bench)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if o.scale, err = counts("-scale", *scale); err != nil {
		return o, err
	}
	if o.inames, err = counts("-inames", *inames); err != nil {
		return o, err
	}
	if o.haddrs < 2 || o.haddrs > 2*maxHealthNames {
		return o, fmt.Errorf("-haddrs: %d is not between 2 and %d (two addresses a name, 127.1-2.x.y)", o.haddrs, 2*maxHealthNames)
	}
	for _, p := range strings.Split(o.phases, ",") {
		if !slices.Contains(allPhases, strings.TrimSpace(p)) {
			return o, fmt.Errorf("-phases: unknown phase %q (%s)", p, strings.Join(allPhases, ", "))
		}
	}
	return o, nil
}

// counts parses a comma-separated list of record or name counts, sorted.
func counts(flagName, list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: %q is not a count", flagName, f)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// allPhases are the phases, in the order they run. Each is a file named after what it
// measures: A phase_cpu.go (CPU per question, with its report, servers and statistics),
// Q phase_queries.go, S phase_scale.go, C phase_churn.go, P phase_propagation.go,
// W phase_writer.go, X phase_transfers.go (and phase_transfers_secondaries.go), I
// phase_ixfr.go (and phase_ixfr_restarts.go), B phase_pod.go, T phase_steering.go, H phase_health.go (and report_health.go,
// health_metrics.go).
var allPhases = []string{"A", "Q", "S", "C", "P", "W", "X", "I", "B", "T", "H"}

func (o options) has(phase string) bool {
	for _, p := range strings.Split(o.phases, ",") {
		if strings.TrimSpace(p) == phase {
			return true
		}
	}
	return false
}

// harness holds what the phases share: the etcd of the records, the binaries, the results.
type harness struct {
	opt                  options
	root, runDir         string
	coredns, binDir      string
	tb                   *runTB
	etcd                 *testenv.Etcd
	cli                  *clientv3.Client
	etcdPIDs             []int     // of the etcd above, for pinning
	kube                 *kubeEnv  // started by the first phase that needs it
	routes               *routeSet // in kube, made by the first phase that needs them
	res                  *results
	serverCPU, clientCPU string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == axfrClientArg {
		os.Exit(axfrClientMain(os.Args[2:]))
	}
	opt, err := parseFlags(os.Args[1:])
	if err == flag.ErrHelp {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}
	os.Exit(run(opt))
}

var logMu sync.Mutex
var began = time.Now()

func logf(format string, args ...any) {
	logMu.Lock()
	defer logMu.Unlock()
	fmt.Printf("[%6.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
}

func run(opt options) int {
	root, err := testenv.RepoRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v (run it from the repository)\n", err)
		return 1
	}
	h := &harness{opt: opt, root: root, coredns: filepath.Join(root, "coredns"), binDir: filepath.Join(root, "bin")}
	h.runDir = filepath.Join(root, ".cache", "bench", "run")
	if err := os.RemoveAll(h.runDir); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 1
	}
	if err := os.MkdirAll(h.runDir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 1
	}
	h.tb = newRunTB(h.runDir)
	h.res = &results{date: time.Now().Format("2006-01-02"), started: time.Now(),
		command: strings.TrimSpace("go run ./bench " + strings.Join(os.Args[1:], " "))}

	// Every process goes, whatever happens: at the end, on a failure, on Ctrl-C.
	var once sync.Once
	shutdown := func() {
		once.Do(func() {
			stopAll()
			h.tb.cleanup()
		})
	}
	defer shutdown()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var interrupted atomic.Bool
	go func() {
		sig := <-sigs
		interrupted.Store(true)
		h.tb.quiet() // an interrupted run is not a failure: no log tails
		logf("%s: stopping every process the benchmark started; no report", sig)
		shutdown()
		os.Exit(130)
	}()
	// After an interrupt, the phase that was running fails; this waits for the exit above
	// instead of writing a partial report.
	stopIfInterrupted := func() {
		if interrupted.Load() {
			select {}
		}
	}

	logf("logs and data: %s", h.runDir)
	err = h.setup()
	stopIfInterrupted()
	if err != nil {
		logf("FAILED: %v", err)
		return 1
	}
	failed := false
	for _, ph := range []struct {
		name string
		run  func() error
	}{{"A", h.phaseA}, {"Q", h.phaseQ}, {"S", h.phaseS}, {"C", h.phaseC}, {"P", h.phaseP}, {"W", h.phaseW}, {"X", h.phaseX}, {"I", h.phaseI}, {"B", h.phaseB}, {"T", h.phaseT}, {"H", h.phaseH}} {
		if !opt.has(ph.name) {
			continue
		}
		start := time.Now()
		logf("=== phase %s", ph.name)
		err := catch(ph.run)
		stopIfInterrupted()
		if err != nil {
			failed = true
			logf("phase %s FAILED: %v", ph.name, err)
			h.res.notes = append(h.res.notes, fmt.Sprintf("Phase %s failed: %s", ph.name, firstLine(err.Error())))
		}
		stopAll() // nothing of one phase runs into the next
		logf("=== phase %s took %v", ph.name, time.Since(start).Round(time.Second))
	}
	stopIfInterrupted()
	h.res.took = time.Since(h.res.started)
	md, svg, err := h.write()
	if err != nil {
		logf("FAILED writing the report: %v", err)
		return 1
	}
	logf("report %s, chart %s (took %v)", md, svg, h.res.took.Round(time.Second))
	if failed {
		return 1
	}
	return 0
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// setup checks the binaries, pins, and starts the etcd every phase writes its records into.
func (h *harness) setup() error {
	for _, b := range []string{h.coredns, filepath.Join(h.binDir, "etcd")} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("%s missing: run `make build test-binaries` (or `make bench`)", b)
		}
	}
	if _, err := exec.LookPath("dnsperf"); err != nil && (h.opt.has("A") || h.opt.has("Q") || h.opt.has("S") || h.opt.has("C") || h.opt.has("X") || h.opt.has("T") || h.opt.has("H")) {
		return fmt.Errorf("dnsperf not found: apt-get install dnsperf (`make bench` does)")
	}
	if h.opt.has("A") || h.opt.has("X") && h.opt.secondaries {
		for _, b := range []string{"knotd", "nsd"} {
			if _, err := secondary.Binary(b); err != nil {
				return fmt.Errorf("%w (`make bench` installs them; -secondaries=false runs phase X without)", err)
			}
		}
	}
	if h.opt.pin && runtime.NumCPU() >= 2 {
		if _, err := exec.LookPath("taskset"); err == nil {
			h.serverCPU, h.clientCPU = "0", "1"
		}
	}
	h.res.machine = machineInfo(h)
	os.Setenv(testenv.EnvTestBin, h.binDir)
	return catch(func() error {
		// A quota well above the default 2 GiB: phase S alone writes 1.1M keys, phase C
		// changes 100k keys for minutes, and the run compacts nothing (a compaction of
		// millions of revisions runs for tens of seconds, which would land in a measurement).
		h.etcd = testenv.StartEtcd(h.tb, testenv.WithEtcdArgs(fmt.Sprintf("--quota-backend-bytes=%d", int64(etcdQuota))))
		h.cli = h.etcd.Client(h.tb)
		logf("etcd %s (log %s)", h.etcd.ClientURL, h.etcd.LogFile)
		h.etcdPIDs = childrenNamed("etcd")
		if h.serverCPU != "" {
			for _, pid := range h.etcdPIDs {
				if err := pinPID(pid, h.serverCPU); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func (h *harness) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Minute)
}
