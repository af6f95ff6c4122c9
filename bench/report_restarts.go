package main

import "fmt"

// renderRestarts is the report's section on phase I across restarts.
func renderRestarts(p func(string, ...any), r *iRestarts) {
	p("## I: IXFRs across restarts")
	p("")
	p("gatewaydns with %d names under its own prefix, Knot and NSD as its secondaries, listed once, in", r.names)
	p("the transfer plugin's `to` (records written in %s; both secondaries held the zone %s after the", ms(r.load.Seconds()), ms(r.bootstrap.Seconds()))
	p("server's start). The replica restarts while a name is added; then a second replica joins on the")
	p("same address (SO_REUSEPORT: the kernel spreads the secondaries over both, as a Service does), and")
	p("the two restart one after the other, a name added while each is down. Caught up: from the")
	p("restarted replica's readiness, or the change, to both secondaries answering the new serial. IXFR:")
	p("asked from the serial the secondaries held before the step, as they asked. Counted: the")
	p("transfers the running replicas answered since their start, by kind (`history`: an IXFR from")
	p("before the replica's journal, its difference read from etcd's history), the probes included.")
	p("")
	p("| step | serial | caught up | IXFR moved | IXFR SOAs | IXFR bytes | difference | counted |")
	p("|---|---|---:|---:|---:|---:|---|---|")
	for _, s := range r.steps {
		p("| %s | %d -> %d | %s | %d | %d | %s | %s | %s |", s.what, s.from, s.to, ms(s.caughtUp.Seconds()), s.probe.moved, s.probe.soas,
			sizeString(s.probe.bytes), yesNo(s.probe.incremental), kindsString(s.kinds))
	}
	p("")
	p("Knot's log: %d AXFRs after its first, %d IXFRs.", r.knotAXFRs, r.knotIXFRs)
	p("")
}

// restartTargets checks the restarts against issue 39's goal.
func restartTargets(r *iRestarts) []target {
	t := target{what: "IXFR after a restart and a rolling restart of two replicas (Knot, NSD)",
		goal: fmt.Sprintf("every IXFR <= %d records moved, SOAs aside; no whole transfer", ixfrLimit)}
	if r == nil || len(r.steps) == 0 {
		t.status = status(false, false)
		return []target{t}
	}
	moved, whole, all := 0, 0.0, true
	for _, s := range r.steps {
		moved = max(moved, s.probe.moved)
		whole = max(whole, s.kinds["full"])
		all = all && s.probe.incremental
	}
	t.measured = fmt.Sprintf("at %s names: at most %d records + SOAs in %d steps, a difference each: %s; whole transfers counted %.0f, Knot AXFRs after its first %d",
		countName(r.names), moved, len(r.steps), yesNo(all), whole, r.knotAXFRs)
	t.status = status(true, all && moved <= ixfrLimit && whole == 0 && r.knotAXFRs == 0)
	return []target{t}
}
