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

// targets checks the run against the goals of issue 6, and of issue 16 for zone transfers.
func targets(r *results) []target {
	var out []target
	gw, hosts := r.q.row(mixBasic.name, "gatewaydns"), r.q.row(mixBasic.name, "hosts")
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
	var small, large *sRow
	if r.s != nil && len(r.s.rows) > 0 {
		small, large = &r.s.rows[0], &r.s.rows[len(r.s.rows)-1]
	}
	scaleOK := small != nil && large != small
	{
		t := target{what: "throughput at the largest record count", goal: "QPS at 100k >= 0.85 x QPS at 1k"}
		if scaleOK {
			x := large.qps / small.qps
			t.measured = fmt.Sprintf("%.2f x (%.0f qps at %d records vs %.0f at %d)", x, large.qps, large.records, small.qps, small.records)
			t.status = status(true, x >= 0.85)
		} else {
			t.status = status(false, false)
		}
		out = append(out, t)
	}
	{
		t := target{what: "memory at the largest record count", goal: "RSS <= idle + 150 MB at 100k"}
		if large != nil {
			above := mb(large.rss - r.s.idleRSS)
			t.measured = fmt.Sprintf("%.1f MB above idle at %d records (RSS %.1f MB, idle %.1f MB)", above, large.records, mb(large.rss), mb(r.s.idleRSS))
			t.status = status(true, above <= 150)
		} else {
			t.status = status(false, false)
		}
		out = append(out, t)
	}
	{
		t := target{what: "start to ready at the largest record count", goal: "<= 2 s at 100k"}
		if large != nil {
			t.measured = fmt.Sprintf("%s at %d records", ms(large.ready.Seconds()), large.records)
			t.status = status(true, large.ready.Seconds() <= 2)
		} else {
			t.status = status(false, false)
		}
		out = append(out, t)
	}
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
	{
		t := target{what: "writer from cold", goal: "10k routes published in <= 10 s"}
		if r.w != nil {
			t.measured = fmt.Sprintf("%s for %d routes", ms(r.w.published.Seconds()), r.w.routes)
			// Fewer routes than 10k (a short run) cannot meet the goal as stated.
			t.status = status(true, r.w.published.Seconds() <= 10 && r.w.routes >= 10000)
			if r.w.routes < 10000 {
				t.status = "not measured (fewer than 10k routes)"
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
