package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/dnsperf"
)

// aResults: phase A, the CPU time a question costs, per server.
type aResults struct {
	records        int
	rounds         int
	perf           dnsperf.Options
	latQPS         int
	pinning        string
	baseline       string // the commit of the "before" servers
	beforeCentral  string // the plugins of the shipped central block, before and now
	nowCentral     string
	started, ended string // load averages
	rows           []aRow
	allocs         []allocRow
	notes          []string
}

type aRow struct {
	name, what           string
	cpuPerQ              []float64 // seconds per answered question, each round's
	qps                  []float64 // each round's
	cpuBusy, steal       []float64 // the server CPU's busy and stolen share of each round's run
	answered, sent, lost int64
	rcodes               map[string]int64
	lat                  latencyStats // at -a-latency-qps
	latLost, latSent     int64
	profile              string  // the first round's CPU profile, "" without
	stack                float64 // the profile's share of stack growth and copying
	stackErr             error
	own                  float64 // the share of stack growth gatewaydns's frames caused
	ownErr               error
}

func (a *aResults) row(id string) *aRow {
	if a == nil {
		return nil
	}
	for i := range a.rows {
		if a.rows[i].name == id {
			return &a.rows[i]
		}
	}
	return nil
}

// allocRow is one sub-benchmark of the handler path's allocations.
type allocRow struct {
	name          string
	nsPerOp       float64
	bytes, allocs int64
}

// cpuStat is one CPU's line of /proc/stat, in ticks.
type cpuStat struct{ busy, idle, steal int64 }

// readCPUStat reads /proc/stat's line of cpu (a CPU number; all CPUs when empty).
func readCPUStat(cpu string) (cpuStat, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuStat{}, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) < 9 || f[0] != "cpu"+cpu {
			continue
		}
		var v [8]int64
		for i := range v {
			v[i], _ = strconv.ParseInt(f[i+1], 10, 64)
		}
		// user nice system idle iowait irq softirq steal
		return cpuStat{busy: v[0] + v[1] + v[2] + v[5] + v[6], idle: v[3] + v[4], steal: v[7]}, nil
	}
	return cpuStat{}, fmt.Errorf("/proc/stat has no line cpu%s", cpu)
}

// since is the busy and stolen shares of the time between o and s.
func (s cpuStat) since(o cpuStat) (busy, steal float64) {
	total := float64((s.busy - o.busy) + (s.idle - o.idle) + (s.steal - o.steal))
	return ratio(float64(s.busy-o.busy), total), ratio(float64(s.steal-o.steal), total)
}

// stackFrames are the runtime's functions that grow and copy goroutine stacks.
const stackFrames = `^runtime\.(newstack|copystack)$`

var reShowing = regexp.MustCompile(`Showing nodes accounting for [^,]+, ([0-9.]+)% of`)

// stackShare is the share of a CPU profile's samples in stack growth and copying: the samples
// with runtime.newstack or runtime.copystack on their stack (go tool pprof -focus), counted once
// where both are: the flat time of every node that the focus keeps, so every node is shown.
func stackShare(profile string) (float64, error) {
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=1000000", "-focus="+stackFrames, profile).CombinedOutput()
	if err != nil {
		return math.NaN(), fmt.Errorf("go tool pprof %s: %w: %s", profile, err, firstLine(string(out)))
	}
	m := reShowing.FindSubmatch(out)
	if m == nil {
		return 0, nil // nothing matched the focus
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return math.NaN(), err
	}
	return v / 100, nil
}

// ownGrowth is the share of a CPU profile's samples in stack growth that a gatewaydns function
// caused (the frame that called runtime.newstack is gatewaydns's): what the answer path's own
// frames cost, apart from the growth that miekg/dns's unpacking of a question causes before
// any plugin runs.
func ownGrowth(profile string) (float64, error) {
	out, err := exec.Command("go", "tool", "pprof", "-traces", "-focus=^runtime\\.newstack$", profile).CombinedOutput()
	if err != nil {
		return math.NaN(), fmt.Errorf("go tool pprof -traces %s: %w: %s", profile, err, firstLine(string(out)))
	}
	m := reTotal.FindSubmatch(out)
	if m == nil {
		return math.NaN(), fmt.Errorf("%s: no total in pprof's output", profile)
	}
	total, err := time.ParseDuration(string(m[1]))
	if err != nil || total == 0 {
		return math.NaN(), fmt.Errorf("%s: total %q: %v", profile, m[1], err)
	}
	var own time.Duration
	for _, block := range strings.Split(string(out), "-----------+")[1:] {
		lines := strings.Split(block, "\n")[1:]
		if len(lines) == 0 {
			continue
		}
		f := strings.Fields(lines[0])
		if len(f) < 2 {
			continue
		}
		v, err := time.ParseDuration(f[0])
		if err != nil {
			continue
		}
		for i, l := range lines {
			if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), f[0])) == "runtime.newstack" && i+1 < len(lines) {
				if strings.HasPrefix(strings.TrimSpace(lines[i+1]), "github.com/gatewaydns/") {
					own += v
				}
				break
			}
		}
	}
	return float64(own) / float64(total), nil
}

var reTotal = regexp.MustCompile(`Total samples = ([0-9.]+[a-z]+)`)

func shareString(v float64, err error) string {
	switch {
	case err != nil:
		return "not measured (" + firstLine(err.Error()) + ")"
	case math.IsNaN(v):
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

var reBench = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op\s+(\d+) B/op\s+(\d+) allocs/op`)

// allocsPerQuestion runs the handler path's benchmark (the plugin package's
// BenchmarkServeDNSPacked) with -benchmem: the allocations gatewaydns itself makes per question,
// which a server's CPU time does not show apart from CoreDNS's.
func (h *harness) allocsPerQuestion() ([]allocRow, error) {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", "^BenchmarkServeDNSPacked$", "-benchmem", "-benchtime", "20000x", "./plugin/gatewaydns/")
	cmd.Dir = h.root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test -bench BenchmarkServeDNSPacked: %w\n%s", err, out)
	}
	var rows []allocRow
	for _, l := range strings.Split(string(out), "\n") {
		m := reBench.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		r := allocRow{name: strings.TrimPrefix(m[1], "BenchmarkServeDNSPacked/")}
		r.nsPerOp, _ = strconv.ParseFloat(m[2], 64)
		r.bytes, _ = strconv.ParseInt(m[3], 10, 64)
		r.allocs, _ = strconv.ParseInt(m[4], 10, 64)
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no benchmark lines in:\n%s", out)
	}
	return rows, nil
}
