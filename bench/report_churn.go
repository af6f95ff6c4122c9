package main

// renderChurn is the report's section on phase C.
func renderChurn(p func(string, ...any), c *cResults) {
	p("## C: queries while the zone changes, and the rate of applying changes")
	p("")
	p("gatewaydns with %d records under their own prefix (`path /benchc`). Queries: the full mix at a", c.records)
	p("fixed %d qps (%.0f%% of this server's %.0f qps at saturation), `%s`;", c.rate, 100*c.latFraction, c.qps, perfString(c.perf))
	p("the percentiles come from every query's latency, a lost one counted as the %v timeout. Idle:", c.perf.Timeout)
	p("nothing changes in etcd. Changing: from 200 ms before the latency run until it ends, %d writers", churnWorkers)
	p("commit transactions of %d changes at fixed times, %d changes a second in all: each change", churnBatch, churnRate)
	p("rewrites a record with another TTL, or deletes it (1 in %d) and puts it back at its next turn,", deleteEvery)
	p("going round the records in a shuffled order. Elsewhere: the same changes to a copy of the records")
	p("under `%s`, which the server does not watch. Rounds: %d, each running the three, the first", elsewherePrefix, c.rounds)
	p("in turn. Pinning: %s.", c.pinning)
	p("")
	p("The target compares changing with elsewhere, not with idle: dnsperf shares its CPU with etcd and")
	p("the harness writing the changes, and their work delays its reading of answers, which it counts")
	p("as the server's latency. Elsewhere loads them alike and leaves the server nothing to do.")
	p("")
	p("dnsperf sends no more than `-q` questions ahead of the answers: when the server falls behind,")
	p("it sends fewer than the rate asked for (the sent/s column), and the percentiles understate the")
	p("wait; the target counts that as missed.")
	p("")
	secs := float64(c.rounds) * c.perf.Duration.Seconds()
	p("| condition | sent/s | lost / sent | mean | p50 | p99 | max | p99 / idle p99 | p99 / elsewhere p99 |")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	p("| idle | %.0f | %d / %d | %s | %s | %s | %s | - | - |", ratio(float64(c.idleSent), secs), c.idleLost, c.idleSent, ms(c.idle.mean), ms(c.idle.p50), ms(c.idle.p99), ms(c.idle.max))
	p("| elsewhere: %.0f changes/s outside the zone | %.0f | %d / %d | %s | %s | %s | %s | %.2f | - |", c.elseAchieved, ratio(float64(c.elseSent), secs), c.elseLost, c.elseSent, ms(c.elsewhere.mean), ms(c.elsewhere.p50), ms(c.elsewhere.p99), ms(c.elsewhere.max), ratio(c.elsewhere.p99, c.idle.p99))
	p("| changing: %.0f changes/s in the zone | %.0f | %d / %d | %s | %s | %s | %s | %.2f | %.2f |", c.achieved, ratio(float64(c.busySent), secs), c.busyLost, c.busySent, ms(c.busy.mean), ms(c.busy.p50), ms(c.busy.p99), ms(c.busy.max), ratio(c.busy.p99, c.idle.p99), ratio(c.busy.p99, c.elsewhere.p99))
	p("")
	p("Changes made while measuring: %d (%d puts, %d deletes), %.0f a second.", c.changes, c.puts, c.deletes, c.achieved)
	p("")
	a := c.apply
	if a.changes == 0 {
		return
	}
	p("Apply rate: the server is stopped (SIGSTOP) while the %d writers commit %d changes of the same kind,", churnWorkers, a.changes)
	p("as fast as etcd takes them, then resumed (SIGCONT); the time runs from then until its SOA serial,")
	p("the etcd revision of the zone's last change, is etcd's revision, asked every 2 ms. It includes")
	p("etcd's sending of the backlog on the watch. The server's own counters over the same time show")
	p("whether it applied the events or read the zone anew (a resync).")
	p("")
	p("| changes | written in | applied in | changes/s | watch events | resyncs | caught up |")
	p("|---:|---:|---:|---:|---:|---:|---|")
	caught := "yes"
	if !a.caughtUp {
		caught = "no, after " + applyTimeout.String()
	}
	p("| %d | %s | %s | %.0f | %.0f | %.0f | %s |", a.changes, ms(a.writing.Seconds()), ms(a.took.Seconds()), ratio(float64(a.changes), a.took.Seconds()), a.events, a.resyncs, caught)
	p("")
}
