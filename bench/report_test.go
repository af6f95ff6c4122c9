package main

import (
	"encoding/xml"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/dnsperf"
)

func sampleResults() *results {
	return &results{
		date: "2026-11-22", command: "go run ./bench", took: 90 * time.Second,
		machine: []string{"CPUs: 2"},
		q: &qResults{records: 10000, rounds: 2, latRate: map[string]int{mixBasic.Name: 5000, mixFull.Name: 2000}, latFraction: 0.5,
			perf: dnsperf.Options{Clients: 8, Threads: 2, Outstanding: 200, Duration: 10 * time.Second},
			rows: []qRow{
				{mix: mixBasic.Name, backend: "gatewaydns", qps: 27000, qpsRounds: []float64{27000, 27100}, lat: latencyStats{n: 10, p50: 0.0004, p99: 0.0012}, rcodes: map[string]int64{"NOERROR": 8, "NXDOMAIN": 2}},
				{mix: mixBasic.Name, backend: "hosts", qps: 30000, qpsRounds: []float64{30000, 29000}, lat: latencyStats{n: 10, p50: 0.0003, p99: 0.0011}},
				{mix: mixFull.Name, backend: "gatewaydns", qps: 20000, lat: latencyStats{n: 10, p99: 0.002}},
			}},
		s: &sResults{idleRSS: 60 << 20, rows: []sRow{
			{records: 1000, qps: 25000, qpsRounds: []float64{25000, 24000, 26000}, ready: 100 * time.Millisecond, rss: 62 << 20},
			{records: 100000, qps: 23000, qpsRounds: []float64{23000, 22800, 23900}, ready: 900 * time.Millisecond, rss: 150 << 20},
			{records: 1000000, qps: 19000, qpsRounds: []float64{19000, 19500, 18000}, ready: 6 * time.Second, rss: 600 << 20},
		}},
		c: &cResults{records: 100000, rounds: 3, rate: 10000, achieved: 10010, changes: 300000, idleSent: 300000, busySent: 299000,
			elseAchieved: 10005, elseSent: 300000,
			perf: dnsperf.Options{Duration: 10 * time.Second},
			idle: latencyStats{n: 10, p50: 0.0003, p99: 0.001}, busy: latencyStats{n: 10, p50: 0.0004, p99: 0.0025},
			elsewhere: latencyStats{n: 10, p50: 0.0003, p99: 0.0015},
			apply:     applyResult{changes: 200000, took: 5 * time.Second, caughtUp: true, events: 200000}},
		p: &pResults{rows: []pRow{
			{what: "etcd", n: 200, lat: latencyStats{n: 200, p50: 0.002, p99: 0.02}},
			{what: "writer", n: 200, lat: latencyStats{n: 200, p50: 0.01, p99: 0.6}},
			{what: "external-dns", skipped: "skipped: build failed"},
		}},
		w: &wResults{routes: 100000, gateways: 4, published: 8 * time.Second},
		x: &xResults{records: 100000, names: 92500, rounds: 1, rate: 10000, latFraction: 0.5,
			idle: latencyStats{n: 10, p50: 0.0003, p99: 0.001}, busy: latencyStats{n: 10, p50: 0.0004, p99: 0.003},
			transfers: []xfer{{took: 3 * time.Second, records: 200000}}, axfr: latencyStats{n: 1, p50: 3, max: 3}, axfrRecords: 200000,
			sec: &xSecondaries{rate: 100, duration: time.Minute, changes: 6000, churned: 61 * time.Second, sent: 600000,
				lat: latencyStats{n: 10, p50: 0.0004, p99: 0.0018}, kinds: map[string]float64{"incremental": 40}, notifies: map[string]float64{"ok": 240},
				lags: map[string]*secLag{
					"knot": {kind: "knot", polls: 600, lag: latencyStats{n: 600, p99: 0.6, max: 0.9}, serials: 120, caughtUp: 700 * time.Millisecond},
					"nsd":  {kind: "nsd", polls: 600, missed: 2, lag: latencyStats{n: 600, p99: 1.5, max: 1.9}, serials: 50, caughtUp: 1500 * time.Millisecond},
				}}},
		i: &iResults{rows: []iRow{
			{names: 1000001, records: 1081082, axfr: xfer{records: 3000000, bytes: 200 << 20, took: 9 * time.Second},
				ixfr: xfer{records: 6, bytes: 700, took: 2 * time.Second}, incremental: true, soas: 4, moved: 2, added: true,
				movedRRs: []string{"h0.bench.openmcp.cluster. 300 IN A 10.0.0.1", "h0.bench.openmcp.cluster. 300 IN A 192.0.2.1"}},
		}},
		b: &bResults{routes: 100000, records: 100000, shipped: shippedMemory{limit: 448 << 20, limitText: "448Mi", goMemLimit: "320MiB"}, readme: 410,
			published: 20 * time.Second, steady: 30 * time.Second, axfrNice: 10, peakRSS: 400 << 20, steadyRSS: 350 << 20,
			transfers: []xfer{{took: 2 * time.Second, records: 150000}, {took: 4 * time.Second, records: 250000}},
			rss:       []rssSample{{at: time.Second, rss: 100 << 20}, {at: 19 * time.Second, rss: 390 << 20}, {at: 30 * time.Second, rss: 350 << 20}},
			gc:        []gcCycle{{at: 10 * time.Second, start: 300 << 20, end: 310 << 20, marked: 200 << 20}, {at: 40 * time.Second, start: 310 << 20, end: 312 << 20, marked: 240 << 20}}},
		t: &tResults{names: 10000, latRate: 50000, rows: []tRow{{name: "no policy", qps: 100000}, {name: "weights 90/10", qps: 95000}, {name: "priorities 0/1", qps: 90000}, {name: "no policy, locality", qps: 85000}}},
		h: sampleHealth(),
	}
}

// sampleHealth is a phase H that holds its interval (20,000 checks/s of 10,000 addresses at
// 500ms) with a p99 1.1x that without checks.
func sampleHealth() *hResults {
	delay := []bucket{{0.004, 99000}, {0.008, 100000}, {math.Inf(1), 100000}}
	w := checkWindow{seconds: 5, checks: 100000, delay: delay, upMin: 10000, serverCPU: 4.5, busyTicks: 95, allTicks: 100, accepted: 100000,
		gcs: 8, gcClock: 250 * time.Millisecond, gcLongest: 35 * time.Millisecond}
	return &hResults{addrs: 10000, names: 5000, interval: 500 * time.Millisecond, port: 40000, rounds: 3, rate: 5000, baseQPS: 200000, latFraction: 0.5,
		perf: dnsperf.Options{Duration: 5 * time.Second, MaxQPS: 5000},
		off:  sample{sent: 75000}, on: sample{sent: 75000},
		offLat: latencyStats{n: 75000, p50: 0.0004, p99: 0.002}, onLat: latencyStats{n: 75000, p50: 0.0005, p99: 0.0022},
		offRounds: []latencyStats{{p99: 0.0019}, {p99: 0.002}, {p99: 0.0021}}, onRounds: []latencyStats{{p99: 0.0022}, {p99: 0.0021}, {p99: 0.0023}},
		alone: w, busy: w, base: checkWindow{seconds: 5, delay: []bucket{{0.004, 0}, {math.Inf(1), 0}}, upMin: 0, serverCPU: 0.1, busyTicks: 10, allTicks: 100}}
}

// with is want with the statuses at some indexes replaced: with(want, i, s, j, t, ...).
func with(want []string, changes ...any) []string {
	out := slices.Clone(want)
	for i := 0; i+1 < len(changes); i += 2 {
		out[changes[i].(int)] = changes[i+1].(string)
	}
	return out
}

func TestTargets(t *testing.T) {
	// The statuses of sampleResults, in the order of targets: Q throughput and p99; S at 1M
	// (ready, memory, throughput) and 100k (throughput every round, memory); P from etcd and
	// through the writer; C p99 and apply rate; W; X transfer and p99, secondaries' lag and p99;
	// I at 1M names; B against the shipped limit and the README's table; T's three
	// conditions; H's interval and p99.
	full := []string{"met", "met", "missed", "met", "missed", "met", "met", "met", "missed", "met", "missed", "met", "met", "missed", "met", "met", "met", "met", "met", "met", "met", "missed", "met", "met"}
	tests := []struct {
		name string
		r    *results
		want []string // status per target, in order
	}{
		{"full run", sampleResults(), full},
		{"lost while idle", func() *results {
			r := sampleResults()
			r.x.busy.p99, r.x.idleLost, r.x.idleSent = 0.0015, 50, 1000
			return r
		}(), with(full, 13, "not measured (queries lost while idle: the machine was overloaded)",
			15, "not measured (queries lost while idle: the machine was overloaded)")},
		{"two rounds at 100k", func() *results {
			r := sampleResults()
			r.s.rows[1].qpsRounds = r.s.rows[1].qpsRounds[:2]
			return r
		}(), with(full, 5, "not measured (2 rounds, the goal asks for 3)")},
		{"one round at 100k below the goal", func() *results {
			r := sampleResults()
			r.s.rows[1].qpsRounds[2] = 0.89 * 26000
			return r
		}(), with(full, 5, "missed")},
		{"no 1M records in -scale", func() *results {
			r := sampleResults()
			r.s.rows = r.s.rows[:2]
			return r
		}(), with(full, 2, "not measured (no 1000000-record server in -scale)", 3, "not measured (no 1000000-record server in -scale)",
			4, "not measured (no 1000000-record server in -scale)")},
		{"churn slower than asked", func() *results {
			r := sampleResults()
			r.c.achieved = 6000
			return r
		}(), with(full, 9, "not measured (etcd took 6000 changes/s, not 10000)")},
		{"changes outside the zone slower than asked", func() *results {
			r := sampleResults()
			r.c.elseAchieved = 6000
			return r
		}(), with(full, 9, "not measured (etcd took 6000 changes/s, not 10000)")},
		{"changing above twice the p99 with changes elsewhere, though within twice idle's", func() *results {
			r := sampleResults()
			r.c.busy.p99, r.c.elsewhere.p99 = 0.0019, 0.0009
			return r
		}(), with(full, 9, "missed")},
		{"server behind the rate while changing", func() *results {
			r := sampleResults()
			r.c.busySent = 200000
			return r
		}(), with(full, 9, "missed (the server took 6667 of the 10000 questions/s asked while changing)")},
		{"resynced instead of applying", func() *results {
			r := sampleResults()
			r.c.apply.took, r.c.apply.resyncs = time.Second, 1
			return r
		}(), with(full, 10, "not measured (the server resynced instead of applying the changes)")},
		{"never caught up", func() *results {
			r := sampleResults()
			r.c.apply.caughtUp = false
			return r
		}(), with(full, 10, "missed (the SOA serial did not reach etcd's revision within 2m0s)")},
		{"fewer routes", func() *results {
			r := sampleResults()
			r.w.routes = 10000
			return r
		}(), with(full, 11, "not measured (fewer than 100k routes)")},
		{"IXFR of the whole zone at 1M names", func() *results {
			r := sampleResults()
			r.i.rows[0].incremental, r.i.rows[0].moved = false, 3000000
			return r
		}(), with(full, 16, "missed")},
		{"a secondary behind for more than 2 s", func() *results {
			r := sampleResults()
			r.x.sec.lags["nsd"].lag.max = 2.5
			return r
		}(), with(full, 14, "missed")},
		{"a secondary that never caught up", func() *results {
			r := sampleResults()
			r.x.sec.lags["knot"].caughtUp = -1
			return r
		}(), with(full, 14, "missed")},
		{"only one secondary", func() *results {
			r := sampleResults()
			delete(r.x.sec.lags, "nsd")
			return r
		}(), with(full, 14, "missed")},
		{"p99 with secondaries above twice idle's", func() *results {
			r := sampleResults()
			r.x.sec.lat.p99 = 0.0021
			return r
		}(), with(full, 15, "missed")},
		{"a shorter churn", func() *results {
			r := sampleResults()
			r.x.sec.duration = 10 * time.Second
			return r
		}(), with(full, 14, "not measured (98 changes/s for 10s, not 100 for 1m0s)", 15, "not measured (98 changes/s for 10s, not 100 for 1m0s)")},
		{"no 1M names in -inames", func() *results {
			r := sampleResults()
			r.i.rows[0].names = 100000
			return r
		}(), with(full, 16, "not measured (no size of 1M names or more in -inames)")},
		{"a pod above the shipped limit", func() *results {
			r := sampleResults()
			r.b.peakRSS = 449 << 20
			return r
		}(), with(full, 17, "missed", 18, "missed")},
		{"a pod within the limit but above the README's figure", func() *results {
			r := sampleResults()
			r.b.readme = 399
			return r
		}(), with(full, 18, "missed")},
		{"no row for the pod in the README", func() *results {
			r := sampleResults()
			r.b.readme, r.b.readmeErr = 0, "deploy/README.md: no row"
			return r
		}(), with(full, 18, "not measured (deploy/README.md: no row)")},
		{"a pod with fewer routes", func() *results {
			r := sampleResults()
			r.b.routes = 2000
			return r
		}(), with(full, 17, "not measured (fewer than 100k routes or records)", 18, "not measured (fewer than 100k routes or records)")},
		{"checks behind their interval", func() *results {
			r := sampleResults()
			r.h.busy.checks = 0.96 * 100000
			return r
		}(), with(full, 22, "missed")},
		{"checks starting late", func() *results {
			r := sampleResults()
			r.h.busy.delay = []bucket{{0.004, 90000}, {0.008, 95000}, {0.064, 98000}, {0.128, 100000}, {math.Inf(1), 100000}}
			return r
		}(), with(full, 22, "missed")},
		{"checks skipped", func() *results {
			r := sampleResults()
			r.h.busy.skipped = 101
			return r
		}(), with(full, 22, "missed")},
		{"an address down", func() *results {
			r := sampleResults()
			r.h.busy.upMin = 9999
			return r
		}(), with(full, 22, "missed")},
		{"a p99 above 1.2x without checks", func() *results {
			r := sampleResults()
			r.h.onLat.p99 = 0.0025
			return r
		}(), with(full, 23, "missed")},
		{"the server behind the rate with checks", func() *results {
			r := sampleResults()
			r.h.on.sent = 70000
			return r
		}(), with(full, 23, "missed (the server took 4667 of the 5000 questions/s asked with checks running)")},
		{"queries lost without checks", func() *results {
			r := sampleResults()
			r.h.off.lost = 1000
			return r
		}(), with(full, 23, "not measured (queries lost without checks: the machine was overloaded)")},
		{"fewer addresses", func() *results {
			r := sampleResults()
			r.h.addrs = 2000
			return r
		}(), with(full, 22, "not measured (fewer than 10k addresses)", 23, "not measured (fewer than 10k addresses)")},
		{"nothing measured", &results{}, slices.Repeat([]string{"not measured"}, len(full))},
	}
	for _, tt := range tests {
		got := targets(tt.r)
		if len(got) != len(tt.want) {
			t.Fatalf("%s: %d targets, want %d", tt.name, len(got), len(tt.want))
		}
		for i, g := range got {
			if g.status != tt.want[i] {
				t.Errorf("%s: target %q: %s (%s), want %s", tt.name, g.what, g.status, g.measured, tt.want[i])
			}
		}
	}
}

func TestRenderReport(t *testing.T) {
	tests := []struct {
		name     string
		r        *results
		want     []string
		wantNone []string
	}{
		{"full run", sampleResults(), []string{
			"# gatewaydns benchmarks, 2026-11-22",
			"| gatewaydns | 27000 | 27000, 27100 |",
			"| hosts | 30000 |",
			"| 0.90 | 1.09 |", // gatewaydns / hosts: QPS and p99
			"### full mix (latency at 2000 qps)",
			"| 100000 |",
			"| 90.0 MB |",          // above idle at 100k
			"| 0.92, 0.95, 0.92 |", // per round / smallest at 100k
			"## C: queries while the zone changes",
			"| changing: 10010 changes/s in the zone |",
			"| 1.50 |", // p99 while changing / idle
			"| 200000 |",
			"| 40000 |", // changes/s applied
			"skipped: build failed",
			"**missed**",
			"![QPS and p99 latency",
			"## X: queries while the zone is transferred",
			"| 3.00 |", // p99 during transfers / idle
			"| 1 | 200000 |",
			"## I: the size of an IXFR after a change of one record",
			"| 1000001 | 1081082 | 3000000 | 200.0 MB | 9000 ms |",
			"h0.bench.openmcp.cluster. 300 IN A 192.0.2.1",
			"| Knot and NSD following 100 changes/s | 10000 | 0 / 600000 |",
			"| nsd | 600 | 2 | 1900 ms |",
			"Transfers the server answered meanwhile: incremental 40; NOTIFYs: ok 240.",
			"## B: a pod that publishes and serves",
			"| 100000 | 100000 |",
			"| 2 | 150000-250000 | 3000 ms |",                                       // AXFRs, records each, median
			"| publishing (start to all published) | 245 MiB | 390 MiB | 200 MiB |", // RSS median, largest, live heap
			"| peak (VmHWM) | | 400 MiB |",
			"peak 400 MiB, 89% of the limit",
			"an AXFR client (a child of the harness at\nnice 10)",
			"## H: health checks of 10000 addresses beside the query path",
			"| checking, answering 5000 qps | 5.0 | 20000 | 0 | 0 | 0 | 2.0 ms / 4.0 ms | 10000 | 0.90 | 95% | 20000 | 1.6 | 5% | 35.0 ms |",
			"| 10000 addresses checked | 0.500 ms | 2.2 ms | 2.2 ms, 2.1 ms, 2.3 ms | 0 / 75000 | 5000 |",
			"| 1.10 x (2.2 ms vs 2.0 ms at 5000 qps; lost 0 vs 0) |",
		}, nil},
		{"only W", &results{date: "d", w: &wResults{routes: 10, published: time.Second}}, []string{"## W: writer from cold", "not measured"},
			[]string{"## Q:", "## S:", "## P:", "## X:"}},
	}
	for _, tt := range tests {
		md := renderReport(tt.r, "d.svg")
		for _, w := range tt.want {
			if !strings.Contains(md, w) {
				t.Errorf("%s: report lacks %q:\n%s", tt.name, w, md)
			}
		}
		for _, w := range tt.wantNone {
			if strings.Contains(md, w) {
				t.Errorf("%s: report has %q", tt.name, w)
			}
		}
	}
}

func TestRenderChart(t *testing.T) {
	tests := []struct {
		name  string
		r     *results
		rects int // bars, legend boxes and the background
		texts []string
	}{
		{"full run", sampleResults(), 1 + (3 + 2) + (3 + 2) + (3 + 1) + (3 + 1) + (6 + 3) + (4 + 2) + (4 + 2), []string{"gatewaydns", "hosts", "1000000 records", "27k", "changes in the zone", "changes outside the zone", "during AXFRs", "checks running"}},
		{"no throughput phase", &results{date: "d"}, 1, []string{"No throughput, churn or transfer phase"}},
	}
	for _, tt := range tests {
		svg := renderChart(tt.r)
		// Well-formed XML.
		dec := xml.NewDecoder(strings.NewReader(svg))
		rects := 0
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: invalid SVG: %v\n%s", tt.name, err, svg)
			}
			if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
				rects++
			}
		}
		if rects != tt.rects {
			t.Errorf("%s: %d rects, want %d", tt.name, rects, tt.rects)
		}
		for _, w := range tt.texts {
			if !strings.Contains(svg, w) {
				t.Errorf("%s: chart lacks %q", tt.name, w)
			}
		}
	}
}

func TestNiceCeil(t *testing.T) {
	for _, tt := range []struct{ in, want float64 }{{0, 1}, {0.7, 1}, {1, 1}, {1.5, 2}, {27000, 50000}, {3, 5}, {101, 200}} {
		if got := niceCeil(tt.in); got != tt.want {
			t.Errorf("niceCeil(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr bool
		scale   []int
	}{
		{nil, false, []int{1000, 10000, 100000, 1000000}},
		{[]string{"-scale", "10000,1000", "-phases", "S"}, false, []int{1000, 10000}},
		{[]string{"-scale", "1k"}, true, nil},
		{[]string{"-phases", "Q,X"}, false, []int{1000, 10000, 100000, 1000000}},
		{[]string{"-phases", "C"}, false, []int{1000, 10000, 100000, 1000000}},
		{[]string{"-phases", "Q,Y"}, true, nil},
		{[]string{"-phases", "I", "-inames", "1000000,20000"}, false, []int{1000, 10000, 100000, 1000000}},
		{[]string{"-inames", "1M"}, true, nil},
		{[]string{"-phases", "H", "-haddrs", "127000"}, false, []int{1000, 10000, 100000, 1000000}},
		{[]string{"-phases", "H", "-haddrs", "127001"}, true, nil},
		{[]string{"-haddrs", "1"}, true, nil},
	}
	for _, tt := range tests {
		o, err := parseFlags(tt.args)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseFlags(%v): err = %v", tt.args, err)
			continue
		}
		if err == nil && !slices.Equal(o.scale, tt.scale) {
			t.Errorf("parseFlags(%v): scale %v, want %v", tt.args, o.scale, tt.scale)
		}
	}
}

func TestShortNumKeepsTwoOrThreeDigits(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {0.565, "0.56"}, {1.4, "1.4"}, {12.4, "12"}, {7837, "7.8k"}, {78351, "78k"}, {math.NaN(), "-"},
	} {
		if got := shortNum(tt.v); got != tt.want {
			t.Errorf("shortNum(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}
