package main

import (
	"fmt"
	"math"
)

// target is one goal and what the run measured for it.
type target struct {
	what, goal, measured string
	status               string // met, missed, not measured
}

func status(measured bool, ok bool) string {
	switch {
	case !measured:
		return "not measured"
	case ok:
		return "met"
	default:
		return "missed"
	}
}

// targets checks the run against its goals: issue 17's for scale, churn and the writer, issue 6's
// for queries and propagation, issue 16's for zone transfers, issue 26's for secondaries under
// churn and the size of an IXFR, issue 27's for a pod that publishes and serves, issue 36's for
// names with steering policies and for the health checker beside the query path.
func targets(r *results) []target {
	var out []target
	gw, hosts := r.q.row(mixBasic.Name, "gatewaydns"), r.q.row(mixBasic.Name, "hosts")
	{
		t := target{what: "query throughput vs hosts (A/AAAA/NXDOMAIN mix)", goal: "gatewaydns QPS >= 0.9 x hosts"}
		ok := gw != nil && hosts != nil && hosts.qps > 0
		if ok {
			x := gw.qps / hosts.qps
			t.measured = fmt.Sprintf("%.2f x (%.0f vs %.0f qps)", x, gw.qps, hosts.qps)
			t.status = status(true, x >= 0.9)
		} else {
			t.status = status(false, false)
		}
		out = append(out, t)
	}
	{
		t := target{what: "p99 latency vs hosts (A/AAAA/NXDOMAIN mix, same fixed rate)", goal: "gatewaydns p99 <= 1.2 x hosts p99"}
		ok := gw != nil && hosts != nil && hosts.lat.n > 0 && gw.lat.n > 0
		if ok {
			x := gw.lat.p99 / hosts.lat.p99
			t.measured = fmt.Sprintf("%.2f x (%s vs %s)", x, ms(gw.lat.p99), ms(hosts.lat.p99))
			t.status = status(true, x <= 1.2)
		} else {
			t.status = status(false, false)
		}
		out = append(out, t)
	}
	out = append(out, scaleTargets(r.s)...)
	prop := func(what, goal string, row *pRow, limit float64) target {
		t := target{what: what, goal: goal}
		if row != nil && row.n > 0 {
			t.measured = fmt.Sprintf("p99 %s (p50 %s, %d changes, %d failed)", ms(row.lat.p99), ms(row.lat.p50), row.n, row.failed)
			t.status = status(true, row.lat.p99 <= limit && row.failed == 0)
		} else {
			t.status = status(false, false)
		}
		return t
	}
	out = append(out, prop("propagation from an etcd write", "p99 <= 100 ms", r.p.row(0), 0.1))
	out = append(out, prop("propagation from a Gateway status update (writer)", "p99 <= 500 ms", r.p.row(1), 0.5))
	out = append(out, churnTargets(r.c)...)
	{
		t := target{what: "writer from cold", goal: "100k routes published in <= 20 s"}
		if r.w != nil {
			t.measured = fmt.Sprintf("%s for %d routes", ms(r.w.published.Seconds()), r.w.routes)
			t.status = status(true, r.w.published.Seconds() <= 20)
			// Fewer routes (a short run) cannot meet the goal as stated.
			if r.w.routes < 100000 {
				t.status = "not measured (fewer than 100k routes)"
			}
		} else {
			t.status = status(false, false)
		}
		out = append(out, t)
	}
	{
		t := target{what: "a zone transfer of 100k records", goal: "completes in seconds (median <= 10 s), every transfer complete"}
		if x := r.x; x != nil && len(x.transfers) > 0 {
			t.measured = fmt.Sprintf("median %s, max %s, %d records, %d transfers", ms(x.axfrMedian()), ms(x.axfr.max), x.axfrRecords, len(x.transfers))
			t.status = status(true, x.axfrMedian() <= 10)
			if x.records < 100000 {
				t.status = "not measured (fewer than 100k records)"
			}
		} else {
			t.status = status(false, false)
		}
		out = append(out, t)
	}
	{
		t := target{what: "p99 query latency while transferring (full mix, same fixed rate)", goal: "p99 during AXFRs <= 2 x idle p99"}
		if x := r.x; x != nil && x.idle.n > 0 && x.busy.n > 0 {
			v := x.busy.p99 / x.idle.p99
			t.measured = fmt.Sprintf("%.2f x (%s vs %s; lost %d vs %d)", v, ms(x.busy.p99), ms(x.idle.p99), x.busyLost, x.idleLost)
			t.status = status(true, v <= 2)
			// With questions lost while idle, the idle p99 is the timeout, and so is any p99
			// above it: the ratio says nothing about the transfers.
			if x.idleLost*100 > x.idleSent {
				t.status = "not measured (queries lost while idle: the machine was overloaded)"
			}
		} else {
			t.status = status(false, false)
		}
		out = append(out, t)
	}
	out = append(out, secondaryTargets(r.x)...)
	out = append(out, ixfrTargets(r.i)...)
	out = append(out, podTargets(r.b)...)
	out = append(out, steeringTargets(r.t)...)
	out = append(out, healthTargets(r.h)...)
	if r.a != nil {
		out = append(out, authTargets(r.a)...)
	}
	return out
}

func (p *pResults) row(i int) *pRow {
	if p == nil || i >= len(p.rows) {
		return nil
	}
	return &p.rows[i]
}

// ms formats seconds as milliseconds with a sensible precision.
func ms(sec float64) string {
	v := sec * 1000
	switch {
	case math.IsNaN(v):
		return "-"
	case v < 1:
		return fmt.Sprintf("%.3f ms", v)
	case v < 100:
		return fmt.Sprintf("%.1f ms", v)
	case v >= 10000:
		return fmt.Sprintf("%.1f s", v/1000)
	default:
		return fmt.Sprintf("%.0f ms", v)
	}
}
