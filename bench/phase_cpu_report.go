package main

import (
	"fmt"
	"math"
	"strings"
)

// aBaselineRev is the code before issue 37 (pre-packed answers, shallow frames, the batched
// UDP path): phase A's "before" servers run it, so that its targets compare with it.
const aBaselineRev = "a11d64a"

// The rows phase A's targets compare (aRow.name).
const (
	aKnot          = "Knot"
	aFloor         = "CoreDNS floor (packed replies)"
	aBeforeMinimal = "gatewaydns minimal, before"
	aBeforeCentral = "gatewaydns central, before"
	aMinimal       = "gatewaydns minimal"
	aCentral       = "gatewaydns central"
	aBatched       = "gatewaydns batched UDP"
)

// renderAuth is the report's section on phase A.
func renderAuth(p func(string, ...any), a *aResults) {
	p("## A: CPU time per question, against Knot and NSD")
	p("")
	p("Every server answers the same zone of %d records (the dataset as a zone file for Knot and", a.records)
	p("NSD, the same A and AAAA names as a hosts file for `hosts` and the floor plugin, etcd under `path")
	p("/bencha` for gatewaydns) and is asked the same questions: %s, spread", mixAuth.Name)
	p("evenly over the whole zone. CoreDNS servers are a server block of the zone with `ready` and")
	p("the plugins shown (the floor plugin is bench/floor, a build of ./coredns for the bench only, that")
	p("writes replies packed at its start: what CoreDNS's own server costs a question). Before: the")
	p("binary and the shipped central Corefile of commit %s. They start one at a time, stay up, and", a.baseline)
	p("the %d rounds interleave them, rotating the order. Throughput: `%s`. CPU: the", a.rounds, perfString(a.perf))
	p("user and system time of the server's processes (/proc/PID/stat, NSD's children included) over")
	p("the run, per answered question; the median round counts. Latency: %d qps with `-v`, the", a.latQPS)
	p("percentiles of every question of every round. Pinning: %s. The server CPU's busy", a.pinning)
	p("column is everything that ran on it during the run (the server, the kernel's packet work,")
	p("and any neighbour), and steal what the hypervisor gave to other machines: load average")
	p("%s at the start of the phase, %s at its end.", a.started, a.ended)
	p("")
	knot := a.row(aKnot)
	p("| server | plugins | CPU per question | rounds | vs Knot | QPS | server CPU busy (steal) | p50 at %d qps | p99 | lost / sent | rcodes | stack growth: all / gatewaydns's |", a.latQPS)
	p("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|")
	for _, r := range a.rows {
		vs := "-"
		if knot != nil {
			vs = fmt.Sprintf("%.2f", ratio(median(knot.cpuPerQ), median(r.cpuPerQ)))
		}
		stack := "-"
		if r.profile != "" {
			stack = shareString(r.stack, r.stackErr) + " / " + shareString(r.own, r.ownErr)
		}
		p("| %s | %s | %s | %s | %s | %.0f | %.0f%% (%.1f%%) | %s | %s | %d / %d | %s | %s |", r.name, r.what, us(median(r.cpuPerQ)), joinUS(r.cpuPerQ), vs,
			median(r.qps), 100*median(r.cpuBusy), 100*median(r.steal), ms(r.lat.p50), ms(r.lat.p99), r.latLost, r.latSent, rcodes(r.rcodes), stack)
	}
	p("")
	p("vs Knot: Knot's CPU per question over this one's (1.00 is Knot's cost, 0.50 twice it).")
	p("Stack growth: the share of the first round's CPU profile (pprof plugin) in runtime.newstack")
	p("and runtime.copystack; then the share of it that a gatewaydns function caused (it called")
	p("runtime.newstack), apart from the growth miekg/dns causes unpacking a question in the goroutine")
	p("it starts for each, before any plugin runs. The profiles are in the run directory.")
	p("")
	if len(a.allocs) > 0 {
		p("Allocations gatewaydns makes per question, from the question parsed to the reply written")
		p("(`go test -bench BenchmarkServeDNSPacked -benchmem ./plugin/gatewaydns/`, in process, the")
		p("same zone's layout):")
		p("")
		p("| question | ns/op | B/op | allocs/op |")
		p("|---|---:|---:|---:|")
		for _, r := range a.allocs {
			p("| %s | %.0f | %d | %d |", r.name, r.nsPerOp, r.bytes, r.allocs)
		}
		p("")
	}
	for _, n := range a.notes {
		p("- %s", n)
	}
	if len(a.notes) > 0 {
		p("")
	}
}

// authTargets are issue 37's.
func authTargets(a *aResults) []target {
	cpu := func(name string) float64 {
		if r := a.row(name); r != nil && len(r.cpuPerQ) > 0 {
			return median(r.cpuPerQ)
		}
		return math.NaN()
	}
	vsBefore := func(what, now, before string) target {
		t := target{what: what, goal: "<= 0.6 x before (commit " + a.baseline + ")"}
		n, b := cpu(now), cpu(before)
		if math.IsNaN(n) || math.IsNaN(b) {
			t.status = status(false, false)
			return t
		}
		t.measured = fmt.Sprintf("%.2f x (%s vs %s)", n/b, us(n), us(b))
		if f := cpu(aFloor); !math.IsNaN(f) {
			// The floor plugin is CoreDNS's own cost of a question: "about the floor" is the goal.
			t.measured += fmt.Sprintf("; the floor plugin: %.2f x", f/b)
		}
		t.status = status(true, n/b <= 0.6)
		return t
	}
	var out []target
	if a == nil {
		a = &aResults{}
	}
	out = append(out, vsBefore("CPU per question, gatewaydns minimal Corefile", aMinimal, aBeforeMinimal))
	out = append(out, vsBefore("CPU per question, gatewaydns shipped central Corefile", aCentral, aBeforeCentral))
	{
		t := target{what: "CPU per question, gatewaydns with the batched UDP path", goal: "<= 1.4 x Knot's"}
		n, k := cpu(aBatched), cpu(aKnot)
		if math.IsNaN(n) || math.IsNaN(k) {
			t.status = status(false, false)
		} else {
			t.measured = fmt.Sprintf("%.2f x Knot (%s vs %s)", n/k, us(n), us(k))
			t.status = status(true, n/k <= 1.4)
		}
		out = append(out, t)
	}
	for _, pair := range [][2]string{{aMinimal, aBeforeMinimal}, {aCentral, aBeforeCentral}} {
		t := target{what: "p99 at a fixed rate, " + pair[0], goal: "<= before's p99"}
		n, b := a.row(pair[0]), a.row(pair[1])
		if n == nil || b == nil || n.lat.n == 0 || b.lat.n == 0 {
			t.status = status(false, false)
		} else {
			t.goal = fmt.Sprintf("<= before's p99 at %d qps", a.latQPS)
			t.measured = fmt.Sprintf("%s vs %s (lost %d vs %d)", ms(n.lat.p99), ms(b.lat.p99), n.latLost, b.latLost)
			t.status = status(true, n.lat.p99 <= b.lat.p99)
		}
		out = append(out, t)
	}
	{
		t := target{what: "stack growth in gatewaydns's CPU profiles", goal: "runtime.newstack/copystack < 3% of CPU: all of it (shipped central, batched), gatewaydns's frames' (inside CoreDNS's server)"}
		var shares []string
		ok, measured := true, false
		for _, name := range []string{aCentral, aBatched, aMinimal} {
			r := a.row(name)
			if r == nil || r.profile == "" || r.stackErr != nil || r.ownErr != nil {
				continue
			}
			measured = true
			if name == aMinimal {
				ok = ok && r.own < 0.03
			} else {
				ok = ok && r.stack < 0.03
			}
			shares = append(shares, fmt.Sprintf("%s %.1f%% (gatewaydns's frames %.1f%%)", strings.TrimPrefix(name, "gatewaydns "), 100*r.stack, 100*r.own))
		}
		t.measured = strings.Join(shares, ", ")
		t.status = status(measured, ok)
		out = append(out, t)
	}
	{
		t := target{what: "allocations per question on a pre-packed answer", goal: "0 allocs/op (gatewaydns's own)"}
		var parts []string
		ok, measured := true, false
		for _, r := range a.allocs {
			if strings.HasPrefix(r.name, "hit") {
				measured = true
				ok = ok && r.allocs == 0
				parts = append(parts, fmt.Sprintf("%s %d", r.name, r.allocs))
			}
		}
		t.measured = strings.Join(parts, ", ")
		t.status = status(measured, ok)
		out = append(out, t)
	}
	return out
}

// us formats seconds as microseconds.
func us(sec float64) string {
	if math.IsNaN(sec) {
		return "-"
	}
	return fmt.Sprintf("%.1f us", sec*1e6)
}

func joinUS(vs []float64) string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprintf("%.1f", v*1e6))
	}
	return strings.Join(out, ", ")
}
