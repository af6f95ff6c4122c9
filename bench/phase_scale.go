package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// phaseS: gatewaydns with each record count of -scale: the time to load them into etcd, the
// time from process start to ready, throughput on the full mix, and RSS above an idle server.
// The servers stay up side by side: at 1M records that is about 1.5 GB.
// Each record count has its own prefix in the one etcd (`path /benchN`), so that the servers,
// started one at a time, then run side by side and the throughput rounds interleave them, as
// in phase Q.
func (h *harness) phaseS() error {
	s := &sResults{rounds: h.opt.rounds}
	h.res.s = s
	perfLog := filepath.Join(h.runDir, "dnsperf-S.log")
	warm := h.perf()
	warm.Duration = min(2*time.Second, h.opt.duration)
	gatewaydns := func(path string) string {
		return fmt.Sprintf("gatewaydns {\n    endpoint %s\n    path /%s\n}", h.etcd.ClientURL, path)
	}

	// The baseline: the same binary and stanza on an empty prefix, after the same load.
	largest := newDataset(h.opt.scale[len(h.opt.scale)-1])
	input := filepath.Join(h.runDir, "queries-idle.txt")
	if err := os.WriteFile(input, []byte(dnsperfInput(largest.Queries(mixFull, 20000))), 0o644); err != nil {
		return fmt.Errorf("writing the query file: %w", err)
	}
	idle, _, err := h.start(serverSpec{name: "gatewaydns-idle", cpu: h.serverCPU, body: gatewaydns("bench-empty")}, 60*time.Second)
	if err != nil {
		return err
	}
	if _, err := runDnsperf(h.perf(), idle.DNS, input, perfLog); err != nil {
		return idle.failure(err)
	}
	if s.idleRSS, err = rssBytes(idle.pid()); err != nil {
		return err
	}
	idle.stop()
	logf("S: idle RSS (empty prefix, after a run) %.1f MB", mb(s.idleRSS))

	type scaled struct {
		srv   *coreDNS
		input string
		qps   []float64
	}
	var servers []*scaled
	for _, n := range h.opt.scale {
		path := fmt.Sprintf("bench%d", n)
		d, took, err := h.loadDataset(path, n)
		if err != nil {
			return err
		}
		row := sRow{records: len(d.Records), load: took}
		ctx, cancel := h.ctx()
		s.dbSize, s.dbInUse, err = h.dbSize(ctx)
		cancel()
		if err != nil {
			return err
		}
		input := filepath.Join(h.runDir, fmt.Sprintf("queries-%d.txt", n))
		if err := os.WriteFile(input, []byte(dnsperfInput(d.Queries(mixFull, 20000))), 0o644); err != nil {
			return fmt.Errorf("writing the query file: %w", err)
		}
		srv, ready, err := h.start(serverSpec{name: fmt.Sprintf("gatewaydns-%d", n), cpu: h.serverCPU, body: gatewaydns(path), pprof: h.opt.profile}, readyTimeout(n))
		if err != nil {
			return err
		}
		row.ready = ready
		if row.rssReady, err = rssBytes(srv.pid()); err != nil {
			return err
		}
		if _, err := runDnsperf(warm, srv.DNS, input, perfLog); err != nil {
			return srv.failure(err)
		}
		s.rows = append(s.rows, row)
		servers = append(servers, &scaled{srv: srv, input: input})
		logf("S: %7d records: written in %v (etcd database %.1f MB, %.1f MB in use), ready in %v (RSS %.1f MB)", row.records,
			row.load.Round(time.Millisecond), mb(s.dbSize), mb(s.dbInUse), ready.Round(time.Millisecond), mb(row.rssReady))
	}
	for r := range h.opt.rounds {
		// Per server over the round's slices: questions answered, seconds taken, and the
		// latencies' sum.
		done, took, latSum := make([]float64, len(servers)), make([]float64, len(servers)), make([]float64, len(servers))
		for sl := range sSlices {
			for i := range servers {
				k := (i + r + sl) % len(servers)
				sc := servers[k]
				res, err := h.measureFor(sc.srv, sc.input, perfLog, r == 0 && sl == 0, "full", h.opt.duration/sSlices)
				if err != nil {
					return err
				}
				if res.QPS > 0 {
					took[k] += float64(res.Completed) / res.QPS
				}
				done[k] += float64(res.Completed)
				latSum[k] += res.Avg.Seconds() * float64(res.Completed)
			}
		}
		for k, sc := range servers {
			qps := ratio(done[k], took[k])
			sc.qps = append(sc.qps, qps)
			s.rows[k].lat.mean += ratio(latSum[k], done[k]) / float64(h.opt.rounds)
			logf("S: %7d records, round %d: %.0f qps", s.rows[k].records, r+1, qps)
		}
	}
	for k, sc := range servers {
		row := &s.rows[k]
		row.qps, row.qpsRounds = median(sc.qps), sc.qps
		if row.rss, err = rssBytes(sc.srv.pid()); err != nil {
			return err
		}
		if h.opt.profile {
			if err := h.fetchProfile(sc.srv, "heap?gc=1", "heap-"+sc.srv.Name, 30*time.Second); err != nil {
				return err
			}
		}
		sc.srv.stop()
		logf("S: %7d records: %.0f qps (median), RSS %.1f MB (%.1f MB above idle)", row.records, row.qps, mb(row.rss), mb(row.rss-s.idleRSS))
	}
	return nil
}

// sSlices is how many slices a round of phase S cuts each server's run into, the servers taking
// turns slice by slice: a burst of load from a neighbour on a shared machine then falls on a
// slice of one server, not on its whole round. One took 15% off a 10 s run of the 100k server,
// and off no other server of the same round.
const sSlices = 4

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// readyTimeout bounds a server's start with n records: generous, since a slow start is what
// the report is to show, not a failure of the run.
func readyTimeout(n int) time.Duration {
	return max(120*time.Second, time.Duration(n/5000)*time.Second)
}
