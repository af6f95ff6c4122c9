package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// panel is one bar chart: groups along the x axis, one bar per series in each.
type panel struct {
	title  string
	unit   string
	groups []barGroup
}

type barGroup struct {
	label string
	bars  []bar
}

type bar struct {
	series string
	value  float64
}

var palette = map[string]string{
	"gatewaydns": "#2b6cb0", "etcd": "#c05621", "etcd+cache": "#d69e2e", "hosts": "#2f855a",
}

func color(series string, i int) string {
	if c, ok := palette[series]; ok {
		return c
	}
	others := []string{"#2b6cb0", "#805ad5", "#319795", "#b83280"}
	return others[i%len(others)]
}

// chartPanels turns the results into the chart's panels; phases that did not run have none.
func chartPanels(r *results) []panel {
	var ps []panel
	if q := r.q; q != nil {
		qps := panel{title: "Queries per second (median round), same dnsperf settings", unit: "qps"}
		p99 := panel{title: "p99 latency at the same fixed rate per mix", unit: "ms"}
		for _, m := range []mix{mixBasic, mixFull} {
			g1, g2 := barGroup{label: m.Name + " mix"}, barGroup{label: fmt.Sprintf("%s mix, %d qps", m.Name, q.latRate[m.Name])}
			for _, row := range q.rows {
				if row.mix == m.Name {
					g1.bars = append(g1.bars, bar{row.backend, row.qps})
					g2.bars = append(g2.bars, bar{row.backend, row.lat.p99 * 1000})
				}
			}
			if len(g1.bars) > 0 {
				qps.groups = append(qps.groups, g1)
				p99.groups = append(p99.groups, g2)
			}
		}
		ps = append(ps, qps, p99)
	}
	if s := r.s; s != nil && len(s.rows) > 0 {
		qps := panel{title: "gatewaydns by record count: queries per second (full mix)", unit: "qps"}
		rss := panel{title: "gatewaydns by record count: RSS above idle", unit: "MB"}
		for _, row := range s.rows {
			label := fmt.Sprintf("%d records", row.records)
			qps.groups = append(qps.groups, barGroup{label, []bar{{"gatewaydns", row.qps}}})
			rss.groups = append(rss.groups, barGroup{label, []bar{{"gatewaydns", mb(row.rss - s.idleRSS)}}})
		}
		ps = append(ps, qps, rss)
	}
	if c := r.c; c != nil && c.idle.n > 0 {
		p := panel{title: fmt.Sprintf("gatewaydns, %d records: query latency at %d qps, idle and while etcd changes %.0f records/s", c.records, c.rate, c.achieved), unit: "ms"}
		for _, g := range []struct {
			label                 string
			idle, elsewhere, busy float64
		}{{"p50", c.idle.p50, c.elsewhere.p50, c.busy.p50}, {"p99", c.idle.p99, c.elsewhere.p99, c.busy.p99}} {
			p.groups = append(p.groups, barGroup{g.label, []bar{{"idle", g.idle * 1000}, {"changes outside the zone", g.elsewhere * 1000}, {"changes in the zone", g.busy * 1000}}})
		}
		ps = append(ps, p)
	}
	if x := r.x; x != nil && x.idle.n > 0 {
		p := panel{title: fmt.Sprintf("gatewaydns, %d records: query latency at %d qps, idle and during AXFRs", x.records, x.rate), unit: "ms"}
		for _, g := range []struct {
			label string
			idle  float64
			busy  float64
		}{{"p50", x.idle.p50, x.busy.p50}, {"p99", x.idle.p99, x.busy.p99}} {
			p.groups = append(p.groups, barGroup{g.label, []bar{{"idle", g.idle * 1000}, {"during AXFRs", g.busy * 1000}}})
		}
		ps = append(ps, p)
	}
	if hr := r.h; hr != nil {
		if p, ok := healthPanel(hr); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

// renderChart draws the panels one under the other as a standalone SVG.
func renderChart(r *results) string {
	ps := chartPanels(r)
	const width, panelH = 760, 260
	height := max(len(ps), 1)*panelH + 40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">gatewaydns benchmarks, %s</text>`+"\n", html.EscapeString(r.date))
	if len(ps) == 0 {
		fmt.Fprintf(&b, `<text x="10" y="50">No throughput, churn or transfer phase (Q, S, C or X) in this run.</text>`+"\n")
	}
	for i, p := range ps {
		drawPanel(&b, p, 0, 40+i*panelH, width, panelH)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func drawPanel(b *strings.Builder, p panel, x0, y0, w, h int) {
	const left, right, top, bottom = 70, 150, 24, 40
	plotW, plotH := w-left-right, h-top-bottom
	top0 := 0.0
	series := []string{}
	for _, g := range p.groups {
		for _, br := range g.bars {
			if !math.IsNaN(br.value) {
				top0 = max(top0, br.value)
			}
			if !containsString(series, br.series) {
				series = append(series, br.series)
			}
		}
	}
	scaleMax := niceCeil(top0)
	fmt.Fprintf(b, `<g transform="translate(%d,%d)">`+"\n", x0, y0)
	fmt.Fprintf(b, `<text x="10" y="14" font-weight="bold">%s</text>`+"\n", html.EscapeString(p.title))
	for t := 0; t <= 4; t++ {
		v := scaleMax * float64(t) / 4
		y := top + plotH - int(float64(plotH)*float64(t)/4)
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ddd"/>`+"\n", left, y, left+plotW, y)
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-6, y+4, html.EscapeString(shortNum(v)+" "+p.unit))
	}
	if n := len(p.groups); n > 0 {
		gw := plotW / n
		for gi, g := range p.groups {
			bw := max((gw-20)/max(len(g.bars), 1), 4)
			gx := left + gi*gw + 10
			for bi, br := range g.bars {
				v := br.value
				if math.IsNaN(v) || v < 0 {
					v = 0
				}
				bh := 0
				if scaleMax > 0 {
					bh = int(float64(plotH) * v / scaleMax)
				}
				x := gx + bi*bw
				fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s: %s %s</title></rect>`+"\n",
					x, top+plotH-bh, bw-2, bh, color(br.series, indexOf(series, br.series)), html.EscapeString(br.series), shortNum(br.value), html.EscapeString(p.unit))
				fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" font-size="10">%s</text>`+"\n", x+(bw-2)/2, top+plotH-bh-3, shortNum(br.value))
			}
			fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", left+gi*gw+gw/2, top+plotH+16, html.EscapeString(g.label))
		}
	}
	for i, s := range series {
		y := top + 6 + i*18
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`+"\n", left+plotW+14, y, color(s, i))
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", left+plotW+32, y+10, html.EscapeString(s))
	}
	b.WriteString("</g>\n")
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func shortNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == 0:
		return "0"
	case v >= 10000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 1000:
		return fmt.Sprintf("%.1fk", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func containsString(ss []string, s string) bool { return indexOf(ss, s) >= 0 }

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}
