package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/promtext"
)

// The health checker's metrics (plugin/gatewaydns/healthcheck, metrics.go) as phase H reads
// them: a snapshot of one server at one moment, and what happened between two snapshots.

// bucket is one cumulative bucket of a histogram: the observations at most le.
type bucket struct {
	le    float64
	count float64
}

// checkerSnapshot is one server's checker metrics, CPU time and CPU's counters, and the
// connections the check endpoint had accepted, at one moment.
type checkerSnapshot struct {
	at                                    time.Time
	checks, failed, skipped, inconclusive float64
	up                                    float64  // targets{state="up"}
	delay                                 []bucket // healthcheck_delay_seconds, cumulative, by le
	serverCPU                             time.Duration
	cpu                                   cpuStat // of the CPU the server is pinned to (all when not pinned)
	accepted                              int64
}

// parseChecker reads the checker's series from a scrape of one server block's metrics.
func parseChecker(text string) (checkerSnapshot, error) {
	samples, err := promtext.Parse(text)
	if err != nil {
		return checkerSnapshot{}, fmt.Errorf("parsing the metrics: %w", err)
	}
	sum := func(selector string) float64 {
		v := 0.0
		for _, s := range promtext.Select(samples, selector) {
			v += s.Value
		}
		return v
	}
	s := checkerSnapshot{
		checks:       sum(`coredns_gatewaydns_healthcheck_checks_total`),
		failed:       sum(`coredns_gatewaydns_healthcheck_checks_total{result="fail"}`),
		skipped:      sum(`coredns_gatewaydns_healthcheck_skipped_total`),
		inconclusive: sum(`coredns_gatewaydns_healthcheck_inconclusive_total`),
		up:           sum(`coredns_gatewaydns_healthcheck_targets{state="up"}`),
	}
	for _, b := range promtext.Select(samples, `coredns_gatewaydns_healthcheck_delay_seconds_bucket`) {
		le, err := strconv.ParseFloat(b.Labels["le"], 64)
		if err != nil {
			return s, fmt.Errorf("delay bucket le=%q: %w", b.Labels["le"], err)
		}
		// One server block per process: a second series would add up bucket by bucket.
		if i := slices.IndexFunc(s.delay, func(x bucket) bool { return x.le == le }); i >= 0 {
			s.delay[i].count += b.Value
		} else {
			s.delay = append(s.delay, bucket{le, b.Value})
		}
	}
	if len(s.delay) == 0 {
		return s, fmt.Errorf("no coredns_gatewaydns_healthcheck_delay_seconds in the metrics: is a health check declared?")
	}
	slices.SortFunc(s.delay, func(a, b bucket) int { return cmpFloat(a.le, b.le) })
	return s, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// checkWindow is what a checker did over one or more spans of time, summed.
type checkWindow struct {
	seconds                               float64
	checks, failed, skipped, inconclusive float64
	delay                                 []bucket // observations within the spans, cumulative
	upMin                                 float64  // the fewest targets up at the end of a span
	serverCPU                             float64  // CPU-seconds the server used
	busyTicks, allTicks                   int64    // of the server's CPU
	accepted                              int64    // connections the check endpoint accepted
	// The server's garbage collections that began within the spans (its gctrace).
	gcs                int
	gcClock, gcLongest time.Duration // their wall-clock time, summed; the longest
}

// gcIn counts the collections of cycles that began within [from, to) of the process start.
func (w *checkWindow) gcIn(cycles []gcCycle, from, to time.Duration) {
	for _, c := range cycles {
		if c.at >= from && c.at < to {
			w.gcs++
			w.gcClock += c.clock
			w.gcLongest = max(w.gcLongest, c.clock)
		}
	}
}

// since is what happened between o and s, an earlier snapshot of the same server.
func (s checkerSnapshot) since(o checkerSnapshot) checkWindow {
	w := checkWindow{
		seconds: s.at.Sub(o.at).Seconds(),
		checks:  s.checks - o.checks, failed: s.failed - o.failed,
		skipped: s.skipped - o.skipped, inconclusive: s.inconclusive - o.inconclusive,
		upMin:     s.up,
		serverCPU: (s.serverCPU - o.serverCPU).Seconds(),
		busyTicks: s.cpu.busy - o.cpu.busy,
		allTicks:  (s.cpu.busy - o.cpu.busy) + (s.cpu.idle - o.cpu.idle) + (s.cpu.steal - o.cpu.steal),
		accepted:  s.accepted - o.accepted,
	}
	for _, b := range s.delay {
		prev := 0.0
		if i := slices.IndexFunc(o.delay, func(x bucket) bool { return x.le == b.le }); i >= 0 {
			prev = o.delay[i].count
		}
		w.delay = append(w.delay, bucket{b.le, b.count - prev})
	}
	return w
}

// add sums o into w.
func (w *checkWindow) add(o checkWindow) {
	if w.seconds == 0 {
		*w = o
		w.delay = slices.Clone(o.delay)
		return
	}
	w.seconds += o.seconds
	w.checks += o.checks
	w.failed += o.failed
	w.skipped += o.skipped
	w.inconclusive += o.inconclusive
	w.upMin = math.Min(w.upMin, o.upMin)
	w.serverCPU += o.serverCPU
	w.busyTicks += o.busyTicks
	w.allTicks += o.allTicks
	w.accepted += o.accepted
	w.gcs += o.gcs
	w.gcClock += o.gcClock
	w.gcLongest = max(w.gcLongest, o.gcLongest)
	for _, b := range o.delay {
		if i := slices.IndexFunc(w.delay, func(x bucket) bool { return x.le == b.le }); i >= 0 {
			w.delay[i].count += b.count
		}
	}
}

// rate is checks a second; cpuShare the server's CPU-seconds a second; busy the share of the
// server's CPU that was busy (with anything); delayQuantile the q-quantile of how late checks
// started.
func (w checkWindow) rate() float64                   { return ratio(w.checks, w.seconds) }
func (w checkWindow) cpuShare() float64               { return ratio(w.serverCPU, w.seconds) }
func (w checkWindow) busy() float64                   { return ratio(float64(w.busyTicks), float64(w.allTicks)) }
func (w checkWindow) acceptRate() float64             { return ratio(float64(w.accepted), w.seconds) }
func (w checkWindow) delayQuantile(q float64) float64 { return histogramQuantile(q, w.delay) }

// gcShare is the share of the time a collection was running.
func (w checkWindow) gcShare() float64 { return ratio(w.gcClock.Seconds(), w.seconds) }

// histogramQuantile is the q-quantile of a histogram's cumulative buckets (ascending le, the
// last +Inf), as Prometheus's histogram_quantile estimates it: linear within the bucket the
// rank falls in, from 0 for the first; the largest finite bound when it falls in +Inf; NaN
// without observations.
func histogramQuantile(q float64, buckets []bucket) float64 {
	if len(buckets) == 0 {
		return math.NaN()
	}
	total := buckets[len(buckets)-1].count
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for i, b := range buckets {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				if i == 0 {
					return math.NaN()
				}
				return buckets[i-1].le
			}
			if b.count == below {
				return b.le
			}
			return lower + (b.le-lower)*(rank-below)/(b.count-below)
		}
		lower, below = b.le, b.count
	}
	return buckets[len(buckets)-1].le
}
