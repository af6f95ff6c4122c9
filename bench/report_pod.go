package main

import (
	"fmt"
	"strings"
)

// podReadmeRow begins the row of deploy/README.md's Memory table that sizes a pod doing both,
// which phase B holds its peak RSS to.
const podReadmeRow = "a pod that publishes 100k routes and serves a 100k zone"

// renderPod is the report's section on phase B.
func renderPod(p func(string, ...any), b *bResults) {
	p("## B: a pod that publishes and serves")
	p("")
	p("One gatewaydns stanza that both publishes and answers the zone (`owner`, `kubeconfig`,")
	p("`domain-filter %s`, no `publish-only`), with `transfer { to * }`, under its own prefix", routeDomain)
	p("(`path /%s`), run with the GOMEMLIMIT deploy/ ships (%s; container limit %s: %s and", podPath, b.shipped.goMemLimit, b.shipped.limitText, baseDeployment)
	p("%s agree). Before it starts: %d HTTPRoutes in the kube-apiserver (phase W's, one", chartValues, b.routes)
	p("name each) and %d records of other owners in etcd, the zone it serves; it publishes its", b.records)
	p("%d names into that zone from cold. From its ready, an AXFR client (a child of the harness at", b.routes)
	p("nice %d) transfers the zone back to back, through the publishing and for %v after the last", b.axfrNice, b.steady)
	p("name is in etcd (the steady window); then the pod answers a name of its own and one of")
	p("another owner's, and one more AXFR is checked to hold every name. RSS: VmRSS every 100 ms; the")
	p("peak is VmHWM, which sees between the samples. Heap: its gctrace (GODEBUG=gctrace=1), the live")
	p("heap each collection left and the heap it began or ended with. MiB are 2^20 bytes.")
	p("")
	p("| routes | records of others | start to ready | start to all published | AXFRs | records each (min-max) | AXFR median | final AXFR | CPU |")
	p("|---:|---:|---:|---:|---:|---|---:|---:|---:|")
	lo, hi := transferSpan(b.transfers)
	p("| %d | %d | %s | %s | %d | %d-%d | %s | %d records, %s | %s |", b.routes, b.records, ms(b.ready.Seconds()), ms(b.published.Seconds()),
		len(b.transfers), lo, hi, ms(medianTransfer(b.transfers)), b.final.records, ms(b.final.took.Seconds()), ms(b.cpu.Seconds()))
	p("")
	steadyEnd := b.published + b.steady
	pubMid, pubMax, _ := rssBetween(b.rss, 0, b.published)
	pubLive, pubLiveMax, pubHeap, pubGCs := heapBetween(b.gc, 0, b.published)
	stLive, stLiveMax, stHeap, stGCs := heapBetween(b.gc, b.published, steadyEnd)
	p("| | RSS median | RSS largest sample | live heap median | live heap largest | heap largest | collections |")
	p("|---|---:|---:|---:|---:|---:|---:|")
	p("| publishing (start to all published) | %.0f MiB | %.0f MiB | %.0f MiB | %.0f MiB | %.0f MiB | %d |", mb(pubMid), mb(pubMax), mb(pubLive), mb(pubLiveMax), mb(pubHeap), pubGCs)
	p("| steady (%v after, AXFRs going on) | %.0f MiB | %.0f MiB | %.0f MiB | %.0f MiB | %.0f MiB | %d |", b.steady, mb(b.steadyRSS), mb(b.steadyRSSMax), mb(stLive), mb(stLiveMax), mb(stHeap), stGCs)
	p("| peak (VmHWM) | | %.0f MiB | | | | |", mb(b.peakRSS))
	p("")
	if len(b.answers) > 0 {
		p("Answered at the end: %s.", joinAnswers(b.answers))
		p("")
	}
}

func joinAnswers(as []string) string { return "`" + strings.Join(as, "`; `") + "`" }

// transferSpan is the fewest and the most records a transfer held.
func transferSpan(ts []xfer) (lo, hi int) {
	for i, t := range ts {
		if i == 0 || t.records < lo {
			lo = t.records
		}
		hi = max(hi, t.records)
	}
	return lo, hi
}

// podTargets holds phase B to the limit deploy/ ships and to deploy/README's Memory table. A run
// with fewer than 100k routes or records sizes a smaller pod than the one they are for.
func podTargets(b *bResults) []target {
	limit := target{what: "a pod that publishes 100k routes and serves a 100k zone, AXFRs running", goal: "peak RSS <= the shipped memory limit"}
	table := target{what: "the same pod against deploy/README's Memory table", goal: "peak RSS <= the table's figure for such a pod"}
	if b == nil || b.peakRSS == 0 {
		limit.status, table.status = status(false, false), status(false, false)
		return []target{limit, table}
	}
	limit.goal = fmt.Sprintf("peak RSS <= the shipped memory limit, %s (GOMEMLIMIT %s)", b.shipped.limitText, b.shipped.goMemLimit)
	limit.measured = fmt.Sprintf("peak %.0f MiB, %.0f%% of the limit (steady %.0f MiB; %d routes, %d records of others, %d AXFRs)",
		mb(b.peakRSS), 100*ratio(float64(b.peakRSS), float64(b.shipped.limit)), mb(b.steadyRSS), b.routes, b.records, len(b.transfers))
	limit.status = status(true, b.peakRSS <= b.shipped.limit)
	table.measured = fmt.Sprintf("peak %.0f MiB", mb(b.peakRSS))
	if b.readmeErr != "" {
		table.status = "not measured (" + b.readmeErr + ")"
	} else {
		table.goal = fmt.Sprintf("peak RSS <= the table's %.0f MiB for such a pod", b.readme)
		table.status = status(true, mb(b.peakRSS) <= b.readme)
	}
	if b.routes < scaleMid || b.records < scaleMid {
		limit.status = "not measured (fewer than 100k routes or records)"
		table.status = limit.status
	}
	return []target{limit, table}
}
