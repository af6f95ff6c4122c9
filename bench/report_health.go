package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Phase H's goals (issue 36: "the health checker at 10k checked addresses holds its interval
// and costs the query path no measurable p99"), as the report states them.
const (
	// healthAddrsGoal: fewer addresses measure something else.
	healthAddrsGoal = 10000
	// healthRateSlack: checks a second within this share of addresses/interval, the rate a
	// checker that holds the interval runs at (each address once an interval, on its own phase).
	healthRateSlack = 0.03
	// healthMissShare: checks skipped (the last one still running) or inconclusive (ended
	// well after the timeout, the checker starved) at most this share of the checks run.
	healthMissShare = 0.001
	// healthDelayShare: the p99 of how late checks start at most this share of the interval.
	// With the defaults (down after 2 checks of 500ms, timeout 400ms) an address is down within
	// 1.4 s; 50ms late twice still fails over well within steering.md's 2 s.
	healthDelayShare = 0.1
	// healthP99Ratio: the query p99 with the checks running at most this many times that
	// without, at the same rate: the ratio Q holds gatewaydns to against hosts, about the
	// spread of one server's p99 from round to round on this machine.
	healthP99Ratio = 1.2
)

// healthTargets are issue 36's two goals for phase H.
func healthTargets(hr *hResults) []target {
	interval := target{what: "health checker at 10k addresses holds its interval, while answering queries",
		goal: fmt.Sprintf("checks/s within %.0f%% of addresses/interval; skipped + inconclusive <= %.1f%% of checks; p99 start delay <= %.0f%% of the interval; every address up, no check failed",
			100*healthRateSlack, 100*healthMissShare, 100*healthDelayShare),
		status: status(false, false)}
	p99 := target{what: "query p99 with 10k addresses checked vs none (same fixed rate, interleaved rounds)",
		goal: fmt.Sprintf("p99 <= %.1f x without checks", healthP99Ratio), status: status(false, false)}
	if hr == nil || hr.busy.seconds == 0 {
		return []target{interval, p99}
	}
	w, due := hr.busy, hr.dueRate()
	delay := w.delayQuantile(0.99)
	interval.measured = fmt.Sprintf("%.0f checks/s of %.0f (%.3f x); skipped %.0f, inconclusive %.0f of %.0f; p99 delay %s; %.0f of %d up at the end (fewest), %.0f failed",
		w.rate(), due, w.rate()/due, w.skipped, w.inconclusive, w.checks, ms(delay), w.upMin, hr.addrs, w.failed)
	interval.status = status(true, math.Abs(w.rate()/due-1) <= healthRateSlack &&
		w.skipped+w.inconclusive <= healthMissShare*w.checks &&
		delay <= healthDelayShare*hr.interval.Seconds() &&
		w.upMin >= float64(hr.addrs) && w.failed == 0)
	if hr.addrs < healthAddrsGoal {
		interval.status = "not measured (fewer than 10k addresses)"
	}
	if on, off := hr.onLat, hr.offLat; on.n > 0 && off.n > 0 {
		x := on.p99 / off.p99
		p99.measured = fmt.Sprintf("%.2f x (%s vs %s at %d qps; lost %d vs %d)", x, ms(on.p99), ms(off.p99), hr.rate, hr.on.lost, hr.off.lost)
		p99.status = status(true, x <= healthP99Ratio)
		switch {
		case hr.sentRate(hr.on) < 0.95*float64(hr.rate):
			// dnsperf holds back when -q questions are unanswered: the wait of the questions
			// it never sent is in no percentile, and the server did not keep the rate.
			p99.status = fmt.Sprintf("missed (the server took %.0f of the %d questions/s asked with checks running)", hr.sentRate(hr.on), hr.rate)
		case hr.off.lost*100 > hr.off.sent:
			p99.status = "not measured (queries lost without checks: the machine was overloaded)"
		case hr.addrs < healthAddrsGoal:
			p99.status = "not measured (fewer than 10k addresses)"
		}
	}
	return []target{interval, p99}
}

// sentRate is the questions a second dnsperf sent in the latency runs of s.
func (hr *hResults) sentRate(s sample) float64 {
	return ratio(float64(s.sent), float64(hr.rounds)*hr.perf.Duration.Seconds())
}

// dueRate is the checks a second that the interval asks for.
func (hr *hResults) dueRate() float64 { return float64(hr.addrs) / hr.interval.Seconds() }

// renderHealth is the report's section on phase H.
func renderHealth(p func(string, ...any), hr *hResults) {
	p("## H: health checks of %d addresses beside the query path", hr.addrs)
	p("")
	p("%d names, each of two owners (eu1, us1) with one address in 127.0.0.0/8, every owner declaring", hr.names)
	p("`\"steering\":{\"healthCheck\":\"tcp://:%d\"}`: %d checked addresses, all reaching one listener of the", hr.port, hr.addrs)
	p("harness bound to 0.0.0.0 (which takes connections to every 127.x.y.z), which accepts and closes")
	p("each connection on the client's CPU. Two servers of the same records, binary and Corefile")
	p("(gatewaydns and prometheus), pinned to the server's CPU: one with the default health check options")
	p("(interval %v, timeout, thresholds and concurrency as shipped), one with `healthcheck-interval 1h`", hr.interval)
	p("(its addresses stay unknown, answered as up, through the same steered path: the baseline without")
	p("checks). The %d rounds take turns (rotating the order): the server without checks answers a", hr.rounds)
	p("latency run while the checking one does not run; the checking one starts, waits until every")
	p("address is up, is warmed, runs alone for as long as a latency run, then answers the same run, and")
	p("stops. Latency runs: `%s`, the rate %.0f%% of what the server without checks answers at", perfString(hr.perf), 100*hr.latFraction)
	p("saturation (%.0f qps). The checker's figures are deltas of its metrics over each window, summed", hr.baseQPS)
	p("over the rounds; the delay p99 is estimated from the histogram's buckets as histogram_quantile does.")
	p("Both servers log a gctrace: the collections that began within a window, the share of its time one")
	p("was running (by the wall clock: pauses and concurrent mark) and the longest.")
	p("")
	p("| server, window | seconds | checks/s (due: %.0f) | failed | skipped | inconclusive | start delay p50 / p99 | up at the end (fewest) | server CPU-s/s | server's CPU busy | endpoint accepts/s | GCs/s | in GC | longest GC |", hr.dueRate())
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range []struct {
		name string
		w    checkWindow
	}{{"checking, alone", hr.alone}, {fmt.Sprintf("checking, answering %d qps", hr.rate), hr.busy}, {fmt.Sprintf("without checks, answering %d qps", hr.rate), hr.base}} {
		w := r.w
		p("| %s | %.1f | %.0f | %.0f | %.0f | %.0f | %s / %s | %.0f | %.2f | %.0f%% | %.0f | %.1f | %.0f%% | %s |", r.name, w.seconds, w.rate(), w.failed, w.skipped, w.inconclusive,
			ms(w.delayQuantile(0.5)), ms(w.delayQuantile(0.99)), w.upMin, w.cpuShare(), 100*w.busy(), w.acceptRate(),
			ratio(float64(w.gcs), w.seconds), 100*w.gcShare(), ms(w.gcLongest.Seconds()))
	}
	p("")
	if a := hr.alone; a.checks > 0 {
		p("Alone, the checking server used %.2f CPU-seconds a second (%.0f µs a check) and its CPU was %.0f%% busy,", a.cpuShare(), 1e6*a.serverCPU/a.checks, 100*a.busy())
		p("which leaves %.0f%% of it for questions: what they ask beyond that waits, and checks start late", 100*max(1-a.busy(), 0))
		p("with them. On loopback the endpoint's side of each connection is received on the sender's CPU,")
		p("the server's: against endpoints on other machines a check costs the server less.")
		p("")
	}
	p("| condition | p50 | p99 | p99 by round | lost / sent | sent/s (asked: %d) |", hr.rate)
	p("|---|---:|---:|---|---:|---:|")
	for _, r := range []struct {
		name   string
		s      sample
		st     latencyStats
		rounds []latencyStats
	}{{"without checks", hr.off, hr.offLat, hr.offRounds}, {fmt.Sprintf("%d addresses checked", hr.addrs), hr.on, hr.onLat, hr.onRounds}} {
		p("| %s | %s | %s | %s | %d / %d | %.0f |", r.name, ms(r.st.p50), ms(r.st.p99), p99s(r.rounds), r.s.lost, r.s.sent, hr.sentRate(r.s))
	}
	p("")
}

// p99s lists each round's p99.
func p99s(rounds []latencyStats) string {
	var out []string
	for _, r := range rounds {
		out = append(out, ms(r.p99))
	}
	return strings.Join(out, ", ")
}

// healthPanel is the chart's panel of phase H: query latency without and with the checks.
func healthPanel(hr *hResults) (panel, bool) {
	on, off := hr.onLat, hr.offLat
	if on.n == 0 || off.n == 0 {
		return panel{}, false
	}
	p := panel{title: fmt.Sprintf("gatewaydns, %d names: query latency at %d qps, without and with %d addresses health-checked every %v", hr.names, hr.rate, hr.addrs, hr.interval.Round(time.Millisecond)), unit: "ms"}
	for _, g := range []struct {
		label   string
		off, on float64
	}{{"p50", off.p50, on.p50}, {"p99", off.p99, on.p99}} {
		p.groups = append(p.groups, barGroup{g.label, []bar{{"without checks", g.off * 1000}, {"checks running", g.on * 1000}}})
	}
	return p, true
}
