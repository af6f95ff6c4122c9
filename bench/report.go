package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// write renders the report and the chart into -out.
func (h *harness) write() (md, svg string, err error) {
	dir := h.opt.out
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(h.root, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("creating %s: %w", dir, err)
	}
	md = filepath.Join(dir, h.res.date+".md")
	svg = filepath.Join(dir, h.res.date+".svg")
	if err := os.WriteFile(svg, []byte(renderChart(h.res)), 0o644); err != nil {
		return "", "", fmt.Errorf("writing the chart: %w", err)
	}
	if err := os.WriteFile(md, []byte(renderReport(h.res, filepath.Base(svg))), 0o644); err != nil {
		return "", "", fmt.Errorf("writing the report: %w", err)
	}
	return md, svg, nil
}

// renderReport is the markdown report of a run.
func renderReport(r *results, chart string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# gatewaydns benchmarks, %s", r.date)
	p("")
	p("`%s`, %v. Every number below comes from this one run on one machine, which is shared and", r.command, r.took.Round(time.Second))
	p("noisy: compare the ratios between backends measured side by side, not the absolute values")
	p("with another run.")
	p("")
	if chart != "" {
		p("![QPS and p99 latency per backend and per record count, latency during zone transfers](%s)", chart)
		p("")
	}
	p("## Machine")
	p("")
	for _, m := range r.machine {
		p("- %s", m)
	}
	p("")

	p("## Targets")
	p("")
	p("| target | goal | measured | |")
	p("|---|---|---|---|")
	for _, t := range targets(r) {
		measured := t.measured
		if measured == "" {
			measured = "-"
		}
		p("| %s | %s | %s | **%s** |", t.what, t.goal, measured, t.status)
	}
	p("")

	if a := r.a; a != nil {
		renderAuth(p, a)
	}

	if q := r.q; q != nil {
		p("## Q: query throughput and latency")
		p("")
		p("%d records in one etcd for gatewaydns, etcd and etcd+cache; the hosts plugin holds the", q.records)
		p("same A and AAAA names in a hosts file. Every backend is a server block of the same `./coredns`")
		p("with only `ready` besides it. They start one at a time and stay up; the %d rounds interleave", q.rounds)
		p("them (rotating the order), so that the machine's load changes hit all alike; the QPS is the")
		p("median round. Client: `%s` for throughput. Latency runs send a fixed rate, the same for every", perfString(q.perf))
		p("backend of a mix (%.0f%% of the slowest one's QPS), with `-v`, and the percentiles come from", 100*q.latFraction)
		p("every query's latency: at saturation a latency is mostly time in the queue. Pinning: %s.", q.pinning)
		p("")
		p("Mixes: **%s** (%s) is what hosts can answer too: all four run it. **%s** (%s) adds in-zone", mixBasic.Name, mixBasic, mixFull.Name, mixFull)
		p("CNAME chains, SRV and subtrees (a name with 4 records under child keys), which hosts cannot express.")
		p("hosts answers SERVFAIL, not NXDOMAIN, for a name it lacks (it has no SOA): the rcodes column shows it.")
		p("")
		for _, m := range []mix{mixBasic, mixFull} {
			rows := slices.DeleteFunc(slices.Clone(q.rows), func(x qRow) bool { return x.mix != m.Name })
			if len(rows) == 0 {
				continue
			}
			gw := q.row(m.Name, "gatewaydns")
			p("### %s mix (latency at %d qps)", m.Name, q.latRate[m.Name])
			p("")
			p("| backend | QPS | rounds | mean at saturation | mean | p50 | p99 | lost / sent | rcodes | gatewaydns QPS / this | gatewaydns p99 / this |")
			p("|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|")
			for _, row := range rows {
				qr, pr := "-", "-"
				if gw != nil && row.backend != "gatewaydns" {
					qr = fmt.Sprintf("%.2f", ratio(gw.qps, row.qps))
					pr = fmt.Sprintf("%.2f", ratio(gw.lat.p99, row.lat.p99))
				}
				p("| %s | %.0f | %s | %s | %s | %s | %s | %d / %d | %s | %s | %s |", row.backend, row.qps, joinQPS(row.qpsRounds),
					ms(row.satAvg), ms(row.lat.mean), ms(row.lat.p50), ms(row.lat.p99), row.lost, row.sent, rcodes(row.rcodes), qr, pr)
			}
			p("")
		}
	}

	if s := r.s; s != nil {
		p("## S: scale")
		p("")
		p("gatewaydns with each record count, under its own prefix in the one etcd (`path /benchN`): full")
		p("mix, the same dnsperf settings and pinning as Q. The servers start one at a time, then the %d", s.rounds)
		p("rounds interleave them, each round in %d slices (dnsperf `-l` a %dth of Q's), the servers taking turns", sSlices, sSlices)
		p("slice by slice; a round's QPS is its answers over its slices' time, and the QPS is the median")
		p("round. Records are written with transactions of")
		p("%d puts, 8 at a time, into an etcd with `--quota-backend-bytes=%d`; its database held %.0f MB", txnOps, int64(etcdQuota), mb(s.dbSize))
		p("(%.0f MB in use) after the last load. Ready: from the process start", mb(s.dbInUse))
		p("to the first 200 of the `ready` plugin, polled every 2 ms. RSS: VmRSS after the throughput runs,")
		p("minus the idle RSS, %.1f MB: the same binary and stanza on an empty prefix after the same run.", mb(s.idleRSS))
		p("Per round / smallest: each round's QPS over that of the smallest record count in the same round.")
		p("")
		p("| records | written in | start to ready | QPS | rounds | QPS / smallest | per round / smallest | mean latency | RSS when ready | RSS after load | above idle |")
		p("|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---:|")
		for _, row := range s.rows {
			p("| %d | %s | %s | %.0f | %s | %.2f | %s | %s | %.1f MB | %.1f MB | %.1f MB |", row.records, ms(row.load.Seconds()), ms(row.ready.Seconds()),
				row.qps, joinQPS(row.qpsRounds), ratio(row.qps, s.rows[0].qps), joinRatios(roundRatios(&row, &s.rows[0])), ms(row.lat.mean),
				mb(row.rssReady), mb(row.rss), mb(row.rss-s.idleRSS))
		}
		p("")
	}

	if c := r.c; c != nil {
		renderChurn(p, c)
	}

	if pr := r.p; pr != nil {
		p("## P: propagation")
		p("")
		p("From a change (an etcd put, or a Gateway `status.addresses` update in the kube-apiserver) to the")
		p("first answer that holds the new address, asking over UDP every millisecond; one change at a")
		p("time. external-dns runs with its defaults besides the flags shown, so `--min-event-sync-interval`")
		p("is 5s: that, not its code path, sets its latency.")
		p("")
		p("| change -> answer | path | records in etcd | changes | failed | mean | p50 | p99 | max |")
		p("|---|---|---:|---:|---:|---:|---:|---:|---:|")
		for _, row := range pr.rows {
			if row.skipped != "" {
				p("| %s | %s | %d | - | - | - | - | - | %s |", row.what, row.path, row.records, row.skipped)
				continue
			}
			p("| %s | %s | %d | %d | %d | %s | %s | %s | %s |", row.what, row.path, row.records, row.n, row.failed,
				ms(row.lat.mean), ms(row.lat.p50), ms(row.lat.p99), ms(row.lat.max))
		}
		if w, x := pr.row(1), pr.row(2); w != nil && x != nil && w.n > 0 && x.n > 0 {
			p("")
			p("external-dns / gatewaydns writer: p50 %.0f x, p99 %.0f x.", ratio(x.lat.p50, w.lat.p50), ratio(x.lat.p99, w.lat.p99))
		}
		p("")
	}

	if w := r.w; w != nil {
		p("## W: writer from cold")
		p("")
		p("%d HTTPRoutes (one hostname each, attached to %d Gateways, Accepted in their status as a", w.routes, w.gateways)
		p("controller sets it) exist before a writer CoreDNS starts. Published: from the process start")
		p("until etcd holds all %d names (counted every 5 ms). The counters are etcd's own", w.routes)
		p("(`grpc_server_started_total` by method, `etcd_mvcc_put_total`) and its revision, over the writer's")
		p("start (election and lease included) and 2 s after the last name. CPU: the time each process")
		p("spent on a CPU (user and system, /proc/PID/stat) from the writer's start until all were published:")
		p("on a busy machine it says more than the wall time. Setup: the first route of each Gateway is")
		p("created through the API; the others are copies of it as the API server stored it (name, uid and")
		p("hostname changed), written straight into the API server's etcd (through the API a route takes")
		p("two requests and schema validation, about 250 a second here), and the writer starts once the")
		p("API server's watch cache holds the last of them. The writer's live heap is what its garbage")
		p("collections left (its gctrace): the largest, and the last, 2 s after the last name; its RSS")
		p("also holds the garbage GOGC lets grow in between, unless a GOMEMLIMIT bounds it (%s).", memLimitNote(w.memLimit))
		p("")
		p("| routes | created in | start to ready | start to all published | CPU: writer | kube-apiserver | etcd | writer peak RSS | writer live heap: largest | at the end | Txn RPCs | Put RPCs | keys written | revisions | writer writes_total |")
		p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		p("| %d | %s | %s | %s | %s | %s | %s | %.0f MB | %.0f MB | %.0f MB | %.0f | %.0f | %.0f | %d | %.0f |", w.routes, ms(w.create.Seconds()), ms(w.ready.Seconds()), ms(w.published.Seconds()),
			ms(w.cpu.writer.Seconds()), ms(w.cpu.apiserver.Seconds()), ms(w.cpu.etcd.Seconds()), mb(w.peakRSS), mb(w.liveHeap), mb(w.liveHeapEnd),
			w.etcd.txns, w.etcd.puts, w.etcd.keysPut, w.revisions, w.writes)
		p("")
	}

	if x := r.x; x != nil {
		p("## X: queries while the zone is transferred")
		p("")
		p("gatewaydns with %d records (%d names) under their own prefix (`path /benchx`) and", x.records, x.names)
		p("`transfer { to * }`. Queries: the full mix at a fixed %d qps (%.0f%% of this server's %.0f qps at", x.rate, 100*x.latFraction, x.qps)
		p("saturation), `%s`; the percentiles come from", perfString(x.perf))
		p("every query's latency, a lost one (no answer within the %v timeout) counted as %v. Idle:", x.perf.Timeout, x.perf.Timeout)
		p("nothing else asks the server. Transferring: a client runs AXFRs over TCP (miekg/dns")
		p("`dns.Transfer`) one after the other, from 200 ms before the latency run until it ends; each is")
		p("checked complete (the SOA first and last, every name). The client is a child process of the")
		p("harness at nice %d: a secondary runs on another machine, and at dnsperf's priority its checking", x.axfrNice)
		p("took CPU time from dnsperf, which showed as the server's latency. Rounds: %d, alternating", x.rounds)
		p("which of the two runs first. Pinning: %s.", x.pinning)
		p("")
		p("dnsperf sends no more than `-q` questions ahead of the answers: when the server falls behind,")
		p("it sends fewer than the rate asked for (the sent/s column), and the percentiles understate the wait.")
		p("")
		p("| condition | sent/s | lost / sent | mean | p50 | p99 | max | p99 / idle p99 |")
		p("|---|---:|---:|---:|---:|---:|---:|---:|")
		secs := float64(x.rounds) * x.perf.Duration.Seconds()
		p("| idle | %.0f | %d / %d | %s | %s | %s | %s | - |", ratio(float64(x.idleSent), secs), x.idleLost, x.idleSent, ms(x.idle.mean), ms(x.idle.p50), ms(x.idle.p99), ms(x.idle.max))
		p("| AXFRs back to back | %.0f | %d / %d | %s | %s | %s | %s | %.2f |", ratio(float64(x.busySent), secs), x.busyLost, x.busySent, ms(x.busy.mean), ms(x.busy.p50), ms(x.busy.p99), ms(x.busy.max), ratio(x.busy.p99, x.idle.p99))
		if sx := x.sec; sx != nil {
			p("| Knot and NSD following %d changes/s | %.0f | %d / %d | %s | %s | %s | %s | %.2f |", sx.rate, ratio(float64(sx.sent), float64(x.rounds)*sx.duration.Seconds()), sx.lost, sx.sent,
				ms(sx.lat.mean), ms(sx.lat.p50), ms(sx.lat.p99), ms(sx.lat.max), ratio(sx.lat.p99, x.idle.p99))
			renderSecondaries(p, x)
		}
		p("")
		p("| AXFRs | records each | messages each | median | min | max | records/s (median) |")
		p("|---:|---:|---:|---:|---:|---:|---:|")
		p("| %d | %d | %d | %s | %s | %s | %.0f |", len(x.transfers), x.axfrRecords, x.axfrMessages, ms(x.axfrMedian()), ms(x.axfrMin()), ms(x.axfr.max), ratio(float64(x.axfrRecords), x.axfrMedian()))
		p("")
		if x.axfrTypes != "" {
			p("Records of a transfer by type: %s.", x.axfrTypes)
			p("")
		}
	}

	if i := r.i; i != nil {
		renderIXFR(p, i)
	}

	if t := r.t; t != nil {
		renderSteering(p, t)
	}
	if hr := r.h; hr != nil {
		renderHealth(p, hr)
	}

	if b := r.b; b != nil {
		renderPod(p, b)
	}

	if len(r.notes) > 0 {
		p("## Notes")
		p("")
		for _, n := range r.notes {
			p("- %s", n)
		}
		p("")
	}
	return b.String()
}

func joinQPS(vs []float64) string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprintf("%.0f", v))
	}
	return strings.Join(out, ", ")
}

func rcodes(m map[string]int64) string {
	var total int64
	for _, v := range m {
		total += v
	}
	if total == 0 {
		return "-"
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s %.0f%%", k, 100*float64(m[k])/float64(total)))
	}
	return strings.Join(out, ", ")
}

// memLimitNote says which GOMEMLIMIT phase W's writer ran with.
func memLimitNote(limit string) string {
	if limit == "" {
		return "here none: `-writer-memlimit` sets one"
	}
	return "here GOMEMLIMIT=" + limit + ", `-writer-memlimit`"
}
