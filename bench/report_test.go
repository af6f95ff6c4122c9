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
		q: &qResults{records: 10000, rounds: 2, latRate: map[string]int{mixBasic.name: 5000, mixFull.name: 2000}, latFraction: 0.5,
			perf: dnsperf.Options{Clients: 8, Threads: 2, Outstanding: 200, Duration: 10 * time.Second},
			rows: []qRow{
				{mix: mixBasic.name, backend: "gatewaydns", qps: 27000, qpsRounds: []float64{27000, 27100}, lat: latencyStats{n: 10, p50: 0.0004, p99: 0.0012}, rcodes: map[string]int64{"NOERROR": 8, "NXDOMAIN": 2}},
				{mix: mixBasic.name, backend: "hosts", qps: 30000, qpsRounds: []float64{30000, 29000}, lat: latencyStats{n: 10, p50: 0.0003, p99: 0.0011}},
				{mix: mixFull.name, backend: "gatewaydns", qps: 20000, lat: latencyStats{n: 10, p99: 0.002}},
			}},
		s: &sResults{idleRSS: 60 << 20, rows: []sRow{
			{records: 1000, qps: 25000, ready: 100 * time.Millisecond, rss: 62 << 20},
			{records: 100000, qps: 20000, ready: 1500 * time.Millisecond, rss: 160 << 20},
		}},
		p: &pResults{rows: []pRow{
			{what: "etcd", n: 200, lat: latencyStats{n: 200, p50: 0.002, p99: 0.02}},
			{what: "writer", n: 200, lat: latencyStats{n: 200, p50: 0.01, p99: 0.6}},
			{what: "external-dns", skipped: "skipped: build failed"},
		}},
		w: &wResults{routes: 10000, gateways: 4, published: 8 * time.Second},
		x: &xResults{records: 100000, names: 92500, rounds: 1, rate: 10000, latFraction: 0.5,
			idle: latencyStats{n: 10, p50: 0.0003, p99: 0.001}, busy: latencyStats{n: 10, p50: 0.0004, p99: 0.003},
			transfers: []xfer{{took: 3 * time.Second, records: 200000}}, axfr: latencyStats{n: 1, p50: 3, max: 3}, axfrRecords: 200000},
	}
}

func TestTargets(t *testing.T) {
	tests := []struct {
		name string
		r    *results
		want []string // status per target, in order
	}{
		{"full run", sampleResults(), []string{"met", "met", "missed", "met", "met", "met", "missed", "met", "met", "missed"}},
		{"lost while idle", func() *results {
			r := sampleResults()
			r.x.busy.p99, r.x.idleLost, r.x.idleSent = 0.0015, 50, 1000
			return r
		}(), []string{"met", "met", "missed", "met", "met", "met", "missed", "met", "met", "not measured (queries lost while idle: the machine was overloaded)"}},
		{"nothing measured", &results{}, []string{"not measured", "not measured", "not measured", "not measured", "not measured", "not measured", "not measured", "not measured", "not measured", "not measured"}},
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
			"100.0 MB", // above idle
			"skipped: build failed",
			"**missed**",
			"![QPS and p99 latency",
			"## X: queries while the zone is transferred",
			"| 3.00 |", // p99 during transfers / idle
			"| 1 | 200000 |",
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
		{"full run", sampleResults(), 1 + (3 + 2) + (3 + 2) + (2 + 1) + (2 + 1) + (4 + 2), []string{"gatewaydns", "hosts", "100000 records", "27k", "during AXFRs"}},
		{"no throughput phase", &results{date: "d"}, 1, []string{"No throughput or transfer phase"}},
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
		{nil, false, []int{1000, 10000, 100000}},
		{[]string{"-scale", "10000,1000", "-phases", "S"}, false, []int{1000, 10000}},
		{[]string{"-scale", "1k"}, true, nil},
		{[]string{"-phases", "Q,X"}, false, []int{1000, 10000, 100000}},
		{[]string{"-phases", "Q,Y"}, true, nil},
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
