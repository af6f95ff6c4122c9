package main

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// scrapeText is the checker's part of a server's /metrics, with checks, counters and the
// delay histogram at the given values.
func scrapeText(pass, fail, skipped, inconclusive, up float64, delay [3]float64) string {
	var b strings.Builder
	w := func(format string, args ...any) {
		b.WriteString(strings.TrimSpace(fmt.Sprintf(format, args...)) + "\n")
	}
	w(`# TYPE coredns_gatewaydns_healthcheck_checks_total counter`)
	w(`coredns_gatewaydns_healthcheck_checks_total{result="pass",scheme="tcp",server="dns://:53"} %g`, pass)
	w(`coredns_gatewaydns_healthcheck_checks_total{result="fail",scheme="tcp",server="dns://:53"} %g`, fail)
	w(`coredns_gatewaydns_healthcheck_checks_total{result="pass",scheme="http",server="dns://:53"} 0`)
	w(`# TYPE coredns_gatewaydns_healthcheck_skipped_total counter`)
	w(`coredns_gatewaydns_healthcheck_skipped_total{server="dns://:53"} %g`, skipped)
	w(`# TYPE coredns_gatewaydns_healthcheck_inconclusive_total counter`)
	w(`coredns_gatewaydns_healthcheck_inconclusive_total{server="dns://:53"} %g`, inconclusive)
	w(`# TYPE coredns_gatewaydns_healthcheck_targets gauge`)
	w(`coredns_gatewaydns_healthcheck_targets{server="dns://:53",state="up"} %g`, up)
	w(`coredns_gatewaydns_healthcheck_targets{server="dns://:53",state="down"} 3`)
	w(`# TYPE coredns_gatewaydns_healthcheck_delay_seconds histogram`)
	w(`coredns_gatewaydns_healthcheck_delay_seconds_bucket{server="dns://:53",le="0.004"} %g`, delay[0])
	w(`coredns_gatewaydns_healthcheck_delay_seconds_bucket{server="dns://:53",le="0.008"} %g`, delay[1])
	w(`coredns_gatewaydns_healthcheck_delay_seconds_bucket{server="dns://:53",le="+Inf"} %g`, delay[2])
	w(`coredns_gatewaydns_healthcheck_delay_seconds_sum{server="dns://:53"} 1`)
	w(`coredns_gatewaydns_healthcheck_delay_seconds_count{server="dns://:53"} %g`, delay[2])
	return b.String()
}

func TestCheckerWindowIsTheDifferenceOfTwoScrapes(t *testing.T) {
	before, err := parseChecker(scrapeText(1000, 10, 1, 2, 9000, [3]float64{900, 1000, 1010}))
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseChecker(scrapeText(21000, 10, 1, 3, 10000, [3]float64{20000, 20990, 21010}))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	before.at, after.at = t0, t0.Add(time.Second)
	before.serverCPU, after.serverCPU = time.Second, 1900*time.Millisecond
	before.cpu, after.cpu = cpuStat{busy: 100, idle: 100}, cpuStat{busy: 190, idle: 110}
	before.accepted, after.accepted = 5, 20005
	w := after.since(before)
	if w.rate() != 20000 || w.failed != 0 || w.skipped != 0 || w.inconclusive != 1 || w.upMin != 10000 {
		t.Errorf("window %+v: want 20000 checks/s, 0 failed, 0 skipped, 1 inconclusive, 10000 up", w)
	}
	if w.cpuShare() != 0.9 || w.busy() != 0.9 || w.acceptRate() != 20000 {
		t.Errorf("CPU %v, busy %v, accepts/s %v: want 0.9, 0.9, 20000", w.cpuShare(), w.busy(), w.acceptRate())
	}
	// In the window: 19100 within 4ms, 890 within 8ms, 10 above.
	if got := w.delay; len(got) != 3 || got[0].count != 19100 || got[1].count != 19990 || got[2].count != 20000 {
		t.Errorf("delay buckets %v", got)
	}

	var sum checkWindow
	sum.add(w)
	low := w
	low.upMin, low.failed = 9990, 4
	sum.add(low)
	if sum.seconds != 2 || sum.checks != 40000 || sum.upMin != 9990 || sum.failed != 4 || sum.delay[2].count != 40000 {
		t.Errorf("two windows add up to %+v", sum)
	}
	if w.delay[2].count != 20000 {
		t.Errorf("adding changed the first window's buckets: %v", w.delay)
	}
}

func TestGCInCountsTheCollectionsThatBeganInTheWindow(t *testing.T) {
	cycles := []gcCycle{{at: time.Second, clock: 10 * time.Millisecond}, {at: 2 * time.Second, clock: 30 * time.Millisecond},
		{at: 2500 * time.Millisecond, clock: 20 * time.Millisecond}, {at: 3 * time.Second, clock: 90 * time.Millisecond}}
	var w checkWindow
	w.gcIn(cycles, 2*time.Second, 3*time.Second)
	w.seconds = 1
	if w.gcs != 2 || w.gcClock != 50*time.Millisecond || w.gcLongest != 30*time.Millisecond || math.Abs(w.gcShare()-0.05) > 1e-9 {
		t.Errorf("%d collections, %v in all, %v the longest, share %v: want 2, 50ms, 30ms, 0.05", w.gcs, w.gcClock, w.gcLongest, w.gcShare())
	}
}

func TestParseCheckerWithoutTheHistogramSaysSo(t *testing.T) {
	if _, err := parseChecker("# TYPE up gauge\nup 1\n"); err == nil || !strings.Contains(err.Error(), "delay_seconds") {
		t.Errorf("err = %v, want one naming the delay histogram", err)
	}
}

func TestHistogramQuantileInterpolatesAsPrometheusDoes(t *testing.T) {
	b := []bucket{{0.001, 50}, {0.002, 90}, {0.004, 99}, {0.008, 100}, {math.Inf(1), 100}}
	for _, tt := range []struct {
		q, want float64
	}{
		{0.5, 0.001},   // the first bucket's bound, reached exactly
		{0.25, 0.0005}, // halfway into the first bucket, from 0
		{0.7, 0.0015},  // halfway into the second
		{0.99, 0.004},  // the third's bound
		{0.995, 0.006}, // halfway into the fourth
		{1, 0.008},     // every observation within the last finite bound
	} {
		if got := histogramQuantile(tt.q, b); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("q %v: %v, want %v", tt.q, got, tt.want)
		}
	}
	inInf := []bucket{{0.001, 1}, {0.002, 1}, {math.Inf(1), 100}}
	if got := histogramQuantile(0.99, inInf); got != 0.002 {
		t.Errorf("a rank in +Inf: %v, want the largest finite bound 0.002", got)
	}
	if got := histogramQuantile(0.99, []bucket{{0.001, 0}, {math.Inf(1), 0}}); !math.IsNaN(got) {
		t.Errorf("no observations: %v, want NaN", got)
	}
}
