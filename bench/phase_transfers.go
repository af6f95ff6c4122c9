package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/dnsperf"
	"github.com/gatewaydns/gatewaydns/internal/freeport"
	"github.com/gatewaydns/gatewaydns/internal/secondary"
)

// phaseX: zone transfers. gatewaydns with -xrecords records under their own prefix (`path
// /benchx`) and `transfer { to * }`; the query latency at a fixed rate (the full mix, a
// fraction of this server's throughput, as in Q) while the server is idle, and while a client
// runs AXFRs of the zone back to back over TCP. Each transfer is checked: it begins and ends
// with the SOA and holds every name of the dataset. With -secondaries, a third condition: Knot
// and NSD follow the zone as secondaries while it changes (phase_transfers_secondaries.go). The rounds rotate
// the conditions (rotate).
func (h *harness) phaseX() error {
	n := h.opt.xrecords
	path := "benchx"
	d, loaded, err := h.loadDataset(path, n)
	if err != nil {
		return err
	}
	x := &xResults{records: len(d.Records), rounds: h.opt.rounds, latFraction: h.opt.latFraction, axfrNice: h.opt.axfrNice}
	h.res.x = x
	logf("X: %d records in etcd in %v", len(d.Records), loaded.Round(time.Millisecond))
	input := filepath.Join(h.runDir, "queries-x.txt")
	if err := os.WriteFile(input, []byte(dnsperfInput(d.Queries(mixFull, 20000))), 0o644); err != nil {
		return fmt.Errorf("writing the query file: %w", err)
	}
	want := datasetNames(d)
	x.names = len(want)

	var secPorts []int
	notify := ""
	if h.opt.secondaries {
		if secPorts, err = freeport.Take(len(secondary.Kinds)); err != nil {
			return err
		}
		notify = notifyLines(secPorts)
	}
	body := fmt.Sprintf("transfer {\n    to *\n}\ngatewaydns {\n    endpoint %s\n    path /%s%s\n}", h.etcd.ClientURL, path, notify)
	srv, ready, err := h.start(serverSpec{name: "gatewaydns-transfer", cpu: h.serverCPU, body: body, metrics: true, pprof: h.opt.profile}, 120*time.Second)
	if err != nil {
		return err
	}
	defer srv.stop()
	logf("X: gatewaydns with transfer on %s, ready in %v (log %s)", srv.DNS, ready.Round(time.Millisecond), srv.Log)
	x.pinning = "none; the AXFR client, a child of the harness, unpinned"
	if h.serverCPU != "" {
		restore, err := pinHarness(h.clientCPU)
		if err != nil {
			return err
		}
		defer restore()
		x.pinning = fmt.Sprintf("CoreDNS and etcd on CPU %s; dnsperf, the harness and its AXFR client on CPU %s (taskset)", h.serverCPU, h.clientCPU)
	}

	// One transfer before anything is measured: it checks the zone is complete, and warms up.
	first, err := axfr(srv.DNS, zone, want)
	if err != nil {
		return srv.failure(fmt.Errorf("AXFR: %w", err))
	}
	logf("X: a first AXFR: %d records (%s) of %d names in %d messages, %v", first.records, countsString(first.types), first.names, first.messages, first.took.Round(time.Millisecond))
	x.axfrTypes = countsString(first.types)

	var secs []*secondaryProc
	if h.opt.secondaries {
		if secs, err = h.startSecondaries(srv, secPorts); err != nil {
			return err
		}
	}

	perfLog := filepath.Join(h.runDir, "dnsperf-X.log")
	// The latency runs last -duration (not half of it, as in Q): a transfer of 100k records
	// takes seconds, and several should overlap each run.
	var lp dnsperf.Options
	if x.qps, lp, err = h.latencyRate(srv, input, perfLog); err != nil {
		return err
	}
	x.rate, x.perf = lp.MaxQPS, lp
	logf("X: %.0f qps at saturation; latency runs at %d qps for %v each", x.qps, x.rate, h.opt.duration)
	var idle, busy []float64
	runIdle := func(r int) error {
		res, err := runDnsperf(lp, srv.DNS, input, perfLog)
		if err != nil {
			return srv.failure(err)
		}
		idle = append(idle, withLost(res, lp.Timeout)...)
		x.idleLost += res.Lost
		x.idleSent += res.Sent
		round := summarize(withLost(res, lp.Timeout))
		logf("X: round %d, idle:         p50 %s, p99 %s, lost %d/%d", r+1, ms(round.p50), ms(round.p99), res.Lost, res.Sent)
		return nil
	}
	runBusy := func(r int) error {
		res, ts, err := h.whileTransferring(srv, lp, input, perfLog, want, r == 0)
		if err != nil {
			return err
		}
		busy = append(busy, withLost(res, lp.Timeout)...)
		x.busyLost += res.Lost
		x.busySent += res.Sent
		x.transfers = append(x.transfers, ts...)
		round := summarize(withLost(res, lp.Timeout))
		logf("X: round %d, transferring: p50 %s, p99 %s, lost %d/%d; %d AXFRs", r+1, ms(round.p50), ms(round.p99), res.Lost, res.Sent, len(ts))
		return nil
	}
	runs := []func(int) error{runIdle, runBusy}
	if h.opt.secondaries {
		sx := &xSecondaries{rate: h.opt.secRate, duration: h.opt.secDuration, lags: map[string]*secLag{}, kinds: map[string]float64{}, notifies: map[string]float64{}}
		x.sec = sx
		ch := newChurner(h.cli, d.Records, 2)
		ch.batch = secondaryChurnBatch
		var lat sample
		runs = append(runs, func(r int) error {
			res, err := h.whileSecondariesFollow(srv, secs, ch, lp, input, perfLog, sx)
			if err != nil {
				return err
			}
			round := lat.add(res, lp.Timeout)
			sx.lat, sx.lost, sx.sent = summarize(lat.lat), lat.lost, lat.sent
			logf("X: round %d, secondaries:  p50 %s, p99 %s, lost %d/%d; %d changes in all, %.0f/s", r+1, ms(round.p50), ms(round.p99), res.Lost, res.Sent,
				sx.changes, ratio(float64(sx.changes), sx.churned.Seconds()))
			return nil
		})
	}
	if err := rotate(h.opt.rounds, runs...); err != nil {
		return err
	}
	x.idle, x.busy = summarize(idle), summarize(busy)
	var took []float64
	for _, t := range x.transfers {
		took = append(took, t.took.Seconds())
		x.axfrRecords = max(x.axfrRecords, t.records)
		x.axfrMessages = max(x.axfrMessages, t.messages)
	}
	x.axfr = summarize(took)
	logf("X: %d AXFRs: median %s, max %s, %d records each; p99 idle %s, transferring %s (%.2f x)", len(x.transfers),
		ms(median(took)), ms(x.axfr.max), x.axfrRecords, ms(x.idle.p99), ms(x.busy.p99), ratio(x.busy.p99, x.idle.p99))
	return nil
}

// whileTransferring runs AXFRs of the zone back to back, one at a time, from before the latency
// run lp starts until it has ended (the last one finishes after it). With -profile and
// profile, a CPU profile of the server is taken over the run.
func (h *harness) whileTransferring(srv *coreDNS, lp dnsperf.Options, input, perfLog string, want map[string]bool, profile bool) (dnsperf.Result, []xfer, error) {
	client, err := h.startAXFRLoop(srv.DNS, "axfr-client", want)
	if err != nil {
		return dnsperf.Result{}, nil, err
	}
	// Let the first transfer get going: the server is then sending, not setting up.
	time.Sleep(200 * time.Millisecond)
	var profiled chan error
	if h.opt.profile && profile {
		profiled = make(chan error, 1)
		go func() {
			profiled <- h.fetchProfile(srv, fmt.Sprintf("profile?seconds=%d", max(int(lp.Duration.Seconds())-1, 1)),
				"cpu-"+srv.Name+"-axfr", lp.Duration+30*time.Second)
		}()
	}
	res, err := runDnsperf(lp, srv.DNS, input, perfLog)
	ts, terr := client.finish(60 * time.Second)
	if err != nil {
		return res, ts, srv.failure(err)
	}
	if terr != nil {
		return res, ts, srv.failure(fmt.Errorf("AXFR: %w", terr))
	}
	if profiled != nil {
		if err := <-profiled; err != nil {
			return res, ts, err
		}
	}
	return res, ts, nil
}

// xfer is one AXFR as the client saw it.
type xfer struct {
	took              time.Duration
	records, messages int
	bytes             int64 // read from the connection: the messages with their length prefixes
	names             int   // distinct owner names
	types             map[string]int
}

// axfr transfers zone from server over TCP (xfrIn) and checks the transfer is complete: no
// error, the SOA first and last, and every name of want among the owners.
func axfr(server, zone string, want map[string]bool) (xfer, error) {
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(zone))
	var (
		x           = xfer{types: map[string]int{}}
		first, last dns.RR
		seen        = map[string]bool{}
	)
	wire, err := xfrIn(server, m, func(rr dns.RR) {
		if first == nil {
			first = rr
		}
		last = rr
		x.records++
		x.types[dns.TypeToString[rr.Header().Rrtype]]++
		seen[strings.ToLower(rr.Header().Name)] = true
	})
	x.took, x.messages, x.bytes, x.names = wire.took, wire.messages, wire.bytes, len(seen)
	if err != nil {
		return x, fmt.Errorf("after %d records: %w", x.records, err)
	}
	if _, ok := first.(*dns.SOA); !ok {
		return x, fmt.Errorf("the transfer does not begin with the SOA: %v", first)
	}
	if _, ok := last.(*dns.SOA); !ok || x.records < 2 {
		return x, fmt.Errorf("the transfer does not end with the SOA (%d records): %v", x.records, last)
	}
	missing := 0
	var example string
	for name := range want {
		if !seen[name] {
			missing++
			example = name
		}
	}
	if missing > 0 {
		return x, fmt.Errorf("%d of %d names missing from the transfer (%d records), %s among them", missing, len(want), x.records, example)
	}
	return x, nil
}

// withLost is the latencies of res, in seconds, with each lost question (no answer within
// dnsperf's timeout) counted as the timeout: a stall must not leave the percentiles.
func withLost(res dnsperf.Result, timeout time.Duration) []float64 {
	out := durations(res.Latencies)
	for range res.Lost {
		out = append(out, timeout.Seconds())
	}
	return out
}

// countsString is "A 70000, AAAA 10000, ..." in key order.
func countsString(m map[string]int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(out, ", ")
}
