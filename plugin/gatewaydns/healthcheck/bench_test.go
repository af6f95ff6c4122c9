package healthcheck

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gatewaydns/gatewaydns/internal/cpuuse"
)

// listenersEnv makes the test binary a helper process that serves that many loopback
// listeners (see TestMain): the targets of BenchmarkChecker, in a process of their own so that
// the benchmark's CPU is the checker's alone.
const listenersEnv = "GATEWAYDNS_HEALTHCHECK_LISTENERS"

func TestMain(m *testing.M) {
	if n := os.Getenv(listenersEnv); n != "" {
		serveListeners(n)
		return
	}
	os.Exit(m.Run())
}

// serveListeners opens n listeners on 127.1.x.y (100 per address, each on a port the kernel
// picks, so that no fixed port of another test is taken), serves HTTP 200 on each (a tcp check
// just connects), prints their addresses one per line and an empty line, and serves until its
// standard input closes: when the benchmark ends, or dies.
func serveListeners(n string) {
	var count int
	if _, err := fmt.Sscan(n, &count); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})
	for i := range count {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.1.%d.%d:0", i/100/250, i/100%250+1))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		go func() { _ = http.Serve(ln, ok) }()
		fmt.Fprintln(out, ln.Addr())
	}
	fmt.Fprintln(out)
	out.Flush()
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// startListeners runs the helper with n listeners and returns their addresses.
func startListeners(b *testing.B, n int) []string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", listenersEnv, n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	var addrs []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "" {
		addrs = append(addrs, sc.Text())
	}
	if len(addrs) != n {
		b.Fatalf("the helper opened %d listeners, want %d (%v)", len(addrs), n, sc.Err())
	}
	return addrs
}

// BenchmarkChecker checks 10,000 targets (loopback listeners of a helper process) with the
// defaults, one op being one interval, and reports what checking costs and whether intervals
// hold: cpu-s/s is the checker process's CPU seconds per second (of user and system time),
// checks/s the checks it ran, rounds/interval the checks per target per interval (1 when every
// round runs), p99-delay-ms how late the 99th percentile of checks started (to the histogram's
// bucket; 4096 beyond the histogram), late-% the share of checks that started 64 ms or more late, skipped the rounds
// that found a check still running, and false-down the targets that went down although their
// listener was up. Run it with -benchtime=10x (5 s).
func BenchmarkChecker(b *testing.B) {
	for _, scheme := range []string{"tcp", "http"} {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/%d", scheme, n), func(b *testing.B) { benchChecker(b, scheme, n) })
		}
	}
}

func benchChecker(b *testing.B, scheme string, n int) {
	addrs := startListeners(b, n)
	server := "bench-" + scheme
	c, err := New(Config{}, server, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Stop()
	defer ForgetSeries(server)
	targets := make([]Target, n)
	for i, a := range addrs {
		host, port, _ := net.SplitHostPort(a)
		path := ""
		if scheme == "http" {
			path = "/healthz"
		}
		targets[i] = Target{Addr: host, Check: check(b, scheme+"://:"+port+path)}
	}
	c.Set(targets)
	// Every target checked once (up), or 20 s: on an overloaded machine the first rounds lag,
	// which the figures below show.
	up := targetsByState.WithLabelValues(server, Up.String())
	for deadline := time.Now().Add(20 * time.Second); value(up) < float64(n) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if v := value(up); v < float64(n) {
		b.Logf("%v of %d targets checked and up after 20 s", v, n)
	}

	checks0, delay0, skipped0 := checksRun(server), delays(server), value(checksSkipped.WithLabelValues(server))
	cpu0, start := cpuuse.Now(), time.Now()
	b.ResetTimer()
	for b.Loop() {
		time.Sleep(DefaultInterval)
	}
	b.StopTimer()
	wall := time.Since(start).Seconds()
	cpu := (cpuuse.Now() - cpu0).Seconds()
	ran := checksRun(server) - checks0
	b.ReportMetric(cpu/wall, "cpu-s/s")
	b.ReportMetric(ran/wall, "checks/s")
	b.ReportMetric(ran/wall*DefaultInterval.Seconds()/float64(n), "rounds/interval")
	d := delays(server).minus(delay0)
	b.ReportMetric(d.quantile(0.99)*1000, "p99-delay-ms")
	b.ReportMetric(100*d.above(0.064), "late-%")
	b.ReportMetric(value(checksSkipped.WithLabelValues(server))-skipped0, "skipped")
	// A target that went down while its listener was up: a check that timed out because the
	// machine gave the checker no CPU in time (an overloaded checker fails targets over).
	b.ReportMetric(value(targetsByState.WithLabelValues(server, Down.String())), "false-down")
}

// checksRun is how many checks of server ran.
func checksRun(server string) float64 {
	var sum float64
	for _, s := range []string{"tcp", "http", "https"} {
		for _, r := range []string{"pass", "fail"} {
			sum += value(checks.WithLabelValues(server, s, r))
		}
	}
	return sum
}

// histogram is a snapshot of a histogram: its cumulative bucket counts.
type histogram struct {
	bounds []float64
	counts []uint64
	total  uint64
}

func delays(server string) histogram {
	var d dto.Metric
	_ = checkDelay.WithLabelValues(server).(interface{ Write(*dto.Metric) error }).Write(&d)
	h := histogram{total: d.GetHistogram().GetSampleCount()}
	for _, bk := range d.GetHistogram().GetBucket() {
		h.bounds = append(h.bounds, bk.GetUpperBound())
		h.counts = append(h.counts, bk.GetCumulativeCount())
	}
	return h
}

func (h histogram) minus(o histogram) histogram {
	out := histogram{bounds: h.bounds, total: h.total - o.total, counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		out.counts[i] = h.counts[i] - o.counts[i]
	}
	return out
}

// quantile is the upper bound of the bucket that holds quantile q; beyond the last bucket,
// twice its bound (4.096 s: "later than the histogram says").
func (h histogram) quantile(q float64) float64 {
	for i, c := range h.counts {
		if float64(c) >= q*float64(h.total) {
			return h.bounds[i]
		}
	}
	return 2 * h.bounds[len(h.bounds)-1]
}

// above is the share of observations above the bucket bound b (one of the bounds).
func (h histogram) above(b float64) float64 {
	if h.total == 0 {
		return 0
	}
	for i, bound := range h.bounds {
		if bound >= b {
			return 1 - float64(h.counts[i])/float64(h.total)
		}
	}
	return 0
}
