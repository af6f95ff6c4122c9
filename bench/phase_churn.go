package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/dnsperf"
	"github.com/gatewaydns/gatewaydns/internal/promtext"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
)

const (
	// churnRate is the change rate issue 17 asks queries to stay fast under.
	churnRate = 10000
	// churnWorkers commit the changes, paced or, for the apply rate, as fast as etcd takes them.
	churnWorkers = 4
	// applyTimeout bounds the wait for the server to catch up after it resumes.
	applyTimeout = 2 * time.Minute
)

// cResults: phase C, queries while the zone changes, and the rate the index applies changes.
type cResults struct {
	records            int
	rounds             int
	pinning            string
	perf               dnsperf.Options // of the latency runs
	latFraction        float64
	qps                float64 // at saturation, idle, which the rate is a fraction of
	rate               int
	changes            int64   // over the churn runs
	puts, deletes      int64   // of those
	achieved           float64 // changes per second over the churn runs
	idle, busy         latencyStats
	idleLost, idleSent int64
	busyLost, busySent int64
	// elsewhere: the same changes into a prefix the server does not watch, for a baseline
	// with etcd and the client's CPU as busy as while changing (see churnTargets).
	elsewhere          latencyStats
	elseLost, elseSent int64
	elseAchieved       float64
	apply              applyResult
}

// applyResult: changes written while the server was stopped, and how long it took to catch
// up once resumed.
type applyResult struct {
	changes  int
	writing  time.Duration // for etcd to take them
	took     time.Duration // from SIGCONT to the SOA serial at etcd's revision
	rev      int64
	caughtUp bool
	events   float64 // the server's watch_events_total over the catch-up
	resyncs  float64 // its resyncs_total over the catch-up
}

// phaseC: gatewaydns with -crecords records under their own prefix (`path /benchc`). First the
// query latency at a fixed rate (the full mix, a fraction of the server's throughput, as in X),
// idle and while a paced writer changes churnRate records per second in etcd, the rounds
// alternating which runs first. Then the apply rate: the server is stopped (SIGSTOP) while
// -apply-changes changes are written as fast as etcd takes them, resumed (SIGCONT), and timed
// until its SOA serial, the revision of the zone's last change, is etcd's.
func (h *harness) phaseC() error {
	n := h.opt.crecords
	path := "benchc"
	d, loaded, err := h.loadDataset(path, n)
	if err != nil {
		return err
	}
	c := &cResults{records: len(d.Records), rounds: h.opt.rounds, latFraction: h.opt.latFraction}
	h.res.c = c
	logf("C: %d records in etcd in %v", len(d.Records), loaded.Round(time.Millisecond))
	input := filepath.Join(h.runDir, "queries-c.txt")
	if err := os.WriteFile(input, []byte(dnsperfInput(d.Queries(mixFull, 20000))), 0o644); err != nil {
		return fmt.Errorf("writing the query file: %w", err)
	}
	body := fmt.Sprintf("gatewaydns {\n    endpoint %s\n    path /%s\n}", h.etcd.ClientURL, path)
	srv, ready, err := h.start(serverSpec{name: "gatewaydns-churn", cpu: h.serverCPU, body: body, metrics: true, pprof: h.opt.profile}, 120*time.Second)
	if err != nil {
		return err
	}
	defer srv.stop()
	logf("C: gatewaydns on %s, ready in %v (log %s)", srv.DNS, ready.Round(time.Millisecond), srv.Log)
	c.pinning = "none"
	if h.serverCPU != "" {
		// etcd runs on other machines than a server: here its work on the changes would
		// count as the server's latency. It moves to the client's CPU for the phase, with the
		// harness, which writes the changes.
		restore, err := h.pinEtcd(h.clientCPU)
		if err != nil {
			return err
		}
		defer restore()
		restoreHarness, err := pinHarness(h.clientCPU)
		if err != nil {
			return err
		}
		defer restoreHarness()
		c.pinning = fmt.Sprintf("CoreDNS on CPU %s; dnsperf, etcd and the harness writing the changes on CPU %s (taskset)", h.serverCPU, h.clientCPU)
	}

	perfLog := filepath.Join(h.runDir, "dnsperf-C.log")
	var lp dnsperf.Options
	if c.qps, lp, err = h.latencyRate(srv, input, perfLog); err != nil {
		return err
	}
	c.rate, c.perf = lp.MaxQPS, lp
	logf("C: %.0f qps at saturation; latency runs at %d qps for %v each", c.qps, c.rate, lp.Duration)

	ch := newChurner(h.cli, d.Records, churnWorkers)
	outside, err := h.loadElsewhere(d.Records)
	if err != nil {
		return err
	}
	defer h.clearElsewhere()
	chOutside := newChurner(h.cli, outside, churnWorkers)
	var idle, busy, elsewhere sample
	var churnTime, elseTime time.Duration
	var elseChanges int64
	err = rotate(h.opt.rounds, func(r int) error {
		res, err := runDnsperf(lp, srv.DNS, input, perfLog)
		if err != nil {
			return srv.failure(err)
		}
		run := idle.add(res, lp.Timeout)
		logf("C: round %d, idle:     p50 %s, p99 %s, lost %d/%d", r+1, ms(run.p50), ms(run.p99), res.Lost, res.Sent)
		return nil
	}, func(r int) error {
		res, changes, took, err := h.whileChurning(srv, ch, lp, input, perfLog, r == 0)
		if err != nil {
			return err
		}
		run := busy.add(res, lp.Timeout)
		c.changes += changes
		churnTime += took
		logf("C: round %d, changing: p50 %s, p99 %s, lost %d/%d; %d changes, %.0f/s", r+1, ms(run.p50), ms(run.p99), res.Lost, res.Sent,
			changes, ratio(float64(changes), took.Seconds()))
		return nil
	}, func(r int) error {
		res, changes, took, err := h.whileChurning(srv, chOutside, lp, input, perfLog, false)
		if err != nil {
			return err
		}
		run := elsewhere.add(res, lp.Timeout)
		elseChanges += changes
		elseTime += took
		logf("C: round %d, elsewhere: p50 %s, p99 %s, lost %d/%d; %d changes outside the zone, %.0f/s", r+1, ms(run.p50), ms(run.p99), res.Lost, res.Sent,
			changes, ratio(float64(changes), took.Seconds()))
		return nil
	})
	if err != nil {
		return err
	}
	c.idle, c.idleLost, c.idleSent = summarize(idle.lat), idle.lost, idle.sent
	c.busy, c.busyLost, c.busySent = summarize(busy.lat), busy.lost, busy.sent
	c.elsewhere, c.elseLost, c.elseSent = summarize(elsewhere.lat), elsewhere.lost, elsewhere.sent
	c.achieved = ratio(float64(c.changes), churnTime.Seconds())
	c.elseAchieved = ratio(float64(elseChanges), elseTime.Seconds())
	c.puts, c.deletes = ch.puts.Load(), ch.deletes.Load()
	logf("C: p99 idle %s, with changes elsewhere %s, while changing %s (%.2f x elsewhere, %.2f x idle) at %.0f changes/s",
		ms(c.idle.p99), ms(c.elsewhere.p99), ms(c.busy.p99), ratio(c.busy.p99, c.elsewhere.p99), ratio(c.busy.p99, c.idle.p99), c.achieved)

	// The same churner, which knows the records it deleted: each of its changes is one event.
	c.apply, err = h.applyRate(srv, ch, h.opt.applyChanges)
	if err != nil {
		return err
	}
	a := c.apply
	logf("C: %d changes written in %v while the server was stopped; applied in %v (%.0f changes/s; %.0f watch events, %.0f resyncs)",
		a.changes, a.writing.Round(time.Millisecond), a.took.Round(time.Millisecond), ratio(float64(a.changes), a.took.Seconds()), a.events, a.resyncs)
	return nil
}

// elsewherePrefix holds a copy of phase C's records outside the zone: changing them loads
// etcd, the harness and the client's CPU as changing the zone does, and the server not at all.
const elsewherePrefix = "/benchelsewhere/"

// loadElsewhere writes recs again under elsewherePrefix and returns the copies.
func (h *harness) loadElsewhere(recs []kv) ([]kv, error) {
	outside := make([]kv, len(recs))
	for i, r := range recs {
		_, rest, _ := strings.Cut(strings.TrimPrefix(r.Key, "/"), "/")
		outside[i] = kv{Key: elsewherePrefix + rest, Value: r.Value}
	}
	ctx, cancel := h.ctx()
	defer cancel()
	if err := clearPrefix(ctx, h.cli, elsewherePrefix); err != nil {
		return nil, err
	}
	return outside, loadRecords(ctx, h.cli, outside, 8)
}

// clearElsewhere deletes the copies, which no later phase wants in etcd.
func (h *harness) clearElsewhere() {
	ctx, cancel := h.ctx()
	defer cancel()
	if err := clearPrefix(ctx, h.cli, elsewherePrefix); err != nil {
		logf("C: deleting %s: %v", elsewherePrefix, err)
	}
}

// whileChurning changes records at churnRate from 200 ms before the latency run lp starts
// until it ends; it returns the changes made and over how long. With -profile and profile, a
// CPU profile of the server is taken over the run.
func (h *harness) whileChurning(srv *coreDNS, ch *churner, lp dnsperf.Options, input, perfLog string, profile bool) (dnsperf.Result, int64, time.Duration, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		changes int64
		err     error
	}
	churned := make(chan outcome, 1)
	start := time.Now()
	go func() {
		n, err := ch.run(ctx, churnRate, 0)
		churned <- outcome{n, err}
	}()
	time.Sleep(200 * time.Millisecond)
	profiled := h.profileRun(srv, lp.Duration, "churn", profile)
	res, err := runDnsperf(lp, srv.DNS, input, perfLog)
	cancel()
	out := <-churned
	took := time.Since(start)
	if err != nil {
		return res, out.changes, took, srv.failure(err)
	}
	if out.err != nil {
		return res, out.changes, took, out.err
	}
	return res, out.changes, took, profiled()
}

// applyRate stops the server, writes n changes, resumes it, and times it until its SOA serial
// is etcd's revision: the changes it applied per second, the delivery by etcd's watch included.
func (h *harness) applyRate(srv *coreDNS, ch *churner, n int) (applyResult, error) {
	var a applyResult
	ctx, cancel := h.ctx()
	defer cancel()
	before, err := promtext.Scrape(nil, srv.metricsURL)
	if err != nil {
		return a, srv.failure(err)
	}
	if err := syscall.Kill(srv.pid(), syscall.SIGSTOP); err != nil {
		return a, fmt.Errorf("stopping %s: %w", srv.Name, err)
	}
	resumed := false
	resume := func() error {
		if resumed {
			return nil
		}
		resumed = true
		if err := syscall.Kill(srv.pid(), syscall.SIGCONT); err != nil {
			return fmt.Errorf("resuming %s: %w", srv.Name, err)
		}
		return nil
	}
	defer resume() //nolint:errcheck // on an earlier error: never leave the server stopped
	start := time.Now()
	written, err := ch.run(ctx, 0, n)
	if err != nil {
		return a, err
	}
	a.changes, a.writing = int(written), time.Since(start)
	// Nothing else writes to this etcd now: its revision is that of the last change.
	_, a.rev, err = countPrefix(ctx, h.cli, "/benchc/")
	if err != nil {
		return a, err
	}
	want := uint32(a.rev) // #nosec G115 -- the serial is the revision's low 32 bits (index/serial.go)
	if err := resume(); err != nil {
		return a, err
	}
	resumedAt := time.Now()
	client := &dns.Client{Net: "udp", Timeout: 200 * time.Millisecond}
	for time.Since(resumedAt) < applyTimeout {
		if serial, err := soaSerial(client, srv.DNS); err == nil && !index.SerialAfter(want, serial) {
			a.took, a.caughtUp = time.Since(resumedAt), true
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if !a.caughtUp {
		a.took = time.Since(resumedAt)
	}
	after, err := promtext.Scrape(nil, srv.metricsURL)
	if err != nil {
		return a, srv.failure(err)
	}
	count := func(text, metric string) float64 { v, _ := promtext.Sum(text, metric); return v }
	a.events = count(after, "coredns_gatewaydns_watch_events_total") - count(before, "coredns_gatewaydns_watch_events_total")
	a.resyncs = count(after, "coredns_gatewaydns_resyncs_total") - count(before, "coredns_gatewaydns_resyncs_total")
	return a, nil
}

// pinEtcd moves the bench etcd to cpuList and returns what puts it back on the server's CPU.
func (h *harness) pinEtcd(cpuList string) (restore func(), err error) {
	pids := h.etcdPIDs
	if len(pids) == 0 {
		return nil, fmt.Errorf("pinning etcd: no etcd process found at the start")
	}
	for _, pid := range pids {
		if err := pinPID(pid, cpuList); err != nil {
			return nil, err
		}
	}
	return func() {
		for _, pid := range pids {
			if err := pinPID(pid, h.serverCPU); err != nil {
				logf("putting etcd back on CPU %s: %v", h.serverCPU, err)
			}
		}
	}, nil
}
