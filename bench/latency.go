package main

import (
	"fmt"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/dnsperf"
)

// The pieces of a latency comparison at a fixed rate, the same server in two conditions (idle,
// and busy with something): phase C's, and the shape of phase X's.

// latencyRate warms srv up and measures its throughput on input; the latency runs then send
// -latency-load of it, for -duration each, with one line per question (-v).
func (h *harness) latencyRate(srv *coreDNS, input, perfLog string) (qps float64, lp dnsperf.Options, err error) {
	warm := h.perf()
	warm.Duration = min(2*time.Second, h.opt.duration)
	if _, err := runDnsperf(warm, srv.DNS, input, perfLog); err != nil {
		return 0, lp, srv.failure(err)
	}
	tp, err := runDnsperf(h.perf(), srv.DNS, input, perfLog)
	if err != nil {
		return 0, lp, srv.failure(err)
	}
	lp = h.perf()
	lp.MaxQPS, lp.Verbose, lp.Duration = max(int(tp.QPS*h.opt.latFraction), 100), true, h.opt.duration
	return tp.QPS, lp, nil
}

// sample is the latencies of one condition's runs, a lost question counted as the timeout.
type sample struct {
	lat        []float64
	lost, sent int64
}

// add takes in one run and returns its own summary.
func (s *sample) add(res dnsperf.Result, timeout time.Duration) latencyStats {
	run := withLost(res, timeout)
	s.lat = append(s.lat, run...)
	s.lost += res.Lost
	s.sent += res.Sent
	return summarize(run)
}

// rotate runs each of runs once per round, round r starting with runs[r%len(runs)], so that
// none always runs on a machine another has just warmed or loaded.
func rotate(rounds int, runs ...func(round int) error) error {
	for r := range rounds {
		for i := range runs {
			if err := runs[(r+i)%len(runs)](r); err != nil {
				return err
			}
		}
	}
	return nil
}

// profileRun starts, with -profile and when on, a CPU profile of srv over a run of d from now,
// saved as cpu-<server>-<label>; wait returns how it went (nil when none was taken).
func (h *harness) profileRun(srv *coreDNS, d time.Duration, label string, on bool) (wait func() error) {
	if !h.opt.profile || !on {
		return func() error { return nil }
	}
	profiled := make(chan error, 1)
	go func() {
		profiled <- h.fetchProfile(srv, fmt.Sprintf("profile?seconds=%d", max(int(d.Seconds())-1, 1)),
			"cpu-"+srv.Name+"-"+label, d+30*time.Second)
	}()
	return func() error { return <-profiled }
}
