package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/dnsperf"
	"github.com/gatewaydns/gatewaydns/internal/promtext"
	"github.com/gatewaydns/gatewaydns/internal/secondary"
)

// Phase X's third condition, issue 26's secondaries under churn: Knot and NSD follow the zone
// (NOTIFY, then IXFR) while etcd changes -secondaries-rate of its records a second, one change
// a transaction (each one a new serial), for -secondaries-duration, and dnsperf measures the
// primary at the rate of the other two conditions meanwhile. Their serials are polled every
// lagPoll against the primary's (watchLag).

// xSecondaries is what the condition measured, over every round.
type xSecondaries struct {
	rate     int           // changes asked for a second
	duration time.Duration // of each latency run
	lat      latencyStats
	lost     int64
	sent     int64
	changes  int64
	churned  time.Duration // the time the churner ran, over the rounds
	restored int           // records put back after the rounds' churns
	lags     map[string]*secLag
	kinds    map[string]float64 // the server's transfers_total by kind, over the rounds
	notifies map[string]float64 // its notifies_total by result
}

// secondaryChurnBatch: each change is a transaction of its own, so a serial of its own.
const secondaryChurnBatch = 1

// secondariesCatchUp bounds the wait for the secondaries after a churn ends.
const secondariesCatchUp = 30 * time.Second

// whileSecondariesFollow churns the records at sx.rate from 200 ms before a latency run of
// sx.duration until it ends, watching the secondaries follow, and then until they caught up;
// it then puts back the records the churn left deleted and waits for the secondaries again.
func (h *harness) whileSecondariesFollow(srv *coreDNS, secs []*secondaryProc, ch *churner, lp dnsperf.Options, input, perfLog string, sx *xSecondaries) (dnsperf.Result, error) {
	before, err := promtext.Scrape(nil, srv.metricsURL)
	if err != nil {
		return dnsperf.Result{}, srv.failure(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	churned, watched := make(chan struct{}), make(chan error, 1)
	var lags []*secLag
	go func() {
		var err error
		lags, err = watchLag(srv.DNS, secs, churned, secondariesCatchUp)
		watched <- err
	}()
	done := make(chan error, 1)
	var changes int64
	start := time.Now()
	go func() {
		var err error
		changes, err = ch.run(ctx, sx.rate, 0)
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	lp.Duration = sx.duration
	res, perr := runDnsperf(lp, srv.DNS, input, perfLog)
	cancel()
	cerr := <-done
	sx.churned += time.Since(start)
	sx.changes += changes
	close(churned)
	werr := <-watched
	switch {
	case perr != nil:
		return res, srv.failure(perr)
	case cerr != nil:
		return res, cerr
	case werr != nil:
		return res, werr
	}
	for _, l := range lags {
		all := sx.lags[l.kind]
		if all == nil {
			all = &secLag{kind: l.kind, caughtUp: l.caughtUp}
			sx.lags[l.kind] = all
		}
		if l.lag.max > all.lag.max {
			all.worstAt = l.worstAt
		}
		all.polls, all.missed, all.serials = all.polls+l.polls, all.missed+l.missed, all.serials+l.serials
		all.churning = max(all.churning, l.churning)
		all.lags = append(all.lags, l.lags...)
		all.lag = summarize(all.lags)
		if l.caughtUp < 0 || all.caughtUp >= 0 && l.caughtUp > all.caughtUp {
			all.caughtUp = l.caughtUp
		}
		logf("X: %s: worst lag %s (at %v; %s while churning), p99 %s, mean %s; %d serials; %d of %d polls unanswered; caught up %s after the churn",
			l.kind, ms(l.lag.max), l.worstAt.Round(100*time.Millisecond), ms(l.churning), ms(l.lag.p99), ms(l.lag.mean), l.serials, l.missed, l.polls, caughtUpString(l.caughtUp))
	}

	// Every name back for the next AXFRs, which check that the zone is complete.
	rctx, rcancel := h.ctx()
	defer rcancel()
	n, err := ch.restore(rctx)
	if err != nil {
		return res, err
	}
	sx.restored += n
	// A secondary that missed the last NOTIFY (NSD can, see the report) waits for its refresh,
	// hours away: another change NOTIFYs it again.
	for try := 1; ; try++ {
		_, err := waitSynced(srv.DNS, secs, 30*time.Second)
		if err == nil {
			break
		}
		if try == 3 {
			return res, err
		}
		logf("X: %v; changing a record again", err)
		r := ch.parts[0][0]
		if _, err := h.cli.Put(rctx, r.key, r.value); err != nil {
			return res, fmt.Errorf("etcd: %w", err)
		}
	}
	after, err := promtext.Scrape(nil, srv.metricsURL)
	if err != nil {
		return res, srv.failure(err)
	}
	count := func(metric, label string, into map[string]float64, values ...string) {
		for _, v := range values {
			b, _ := promtext.Sum(before, metric+"{"+label+`="`+v+`"}`)
			a, _ := promtext.Sum(after, metric+"{"+label+`="`+v+`"}`)
			into[v] += a - b
		}
	}
	count("coredns_gatewaydns_transfers_total", "kind", sx.kinds, transferKinds...)
	count("coredns_gatewaydns_notifies_total", "result", sx.notifies, "ok", "failed")
	return res, nil
}

func caughtUpString(d time.Duration) string {
	if d < 0 {
		return fmt.Sprintf("never (within %v)", secondariesCatchUp)
	}
	return ms(d.Seconds())
}

// renderSecondaries is the rows of phase X's report on its third condition.
func renderSecondaries(p func(string, ...any), x *xResults) {
	sx := x.sec
	p("")
	p("With secondaries: Knot (`knotd`) and NSD (`nsd`), from Debian's packages, configured as the")
	p("tests configure them (internal/secondary), each on a loopback port as a secondary of this")
	p("server, which NOTIFYs them (`notify`); on the client's CPU at nice %d. From 200 ms before a", x.axfrNice)
	p("latency run of %v until it ends, etcd changes %d records a second, each change a transaction", sx.duration, sx.rate)
	p("of its own (a serial of its own), as phase C changes them; the same rate of queries as the other")
	p("conditions. Every %v the harness asks the primary and each secondary for the SOA: a secondary's", lagPoll)
	p("lag at a poll is how long it has been behind, from the first poll at which the primary answered")
	p("a newer serial than the secondary's until the secondary answers that serial or a newer one")
	p("(a poll it does not answer counts with the serial it last answered); polled until each has")
	p("caught up after the churn. Then the records the churn left deleted are put back (%d in all).", sx.restored)
	p("Transfers the server answered meanwhile: %s; NOTIFYs: %s.", kindsString(sx.kinds), countsFloat(sx.notifies))
	p("")
	p("When: since the churn of that round began. Worst while churning: before the churn ended (the")
	p("lag afterwards is a secondary that did not follow the last change).")
	p("")
	p("| secondary | polls | unanswered | worst lag | when | worst while churning | p99 lag | mean lag | serials taken | caught up after the churn |")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, kind := range secondary.Kinds {
		l := sx.lags[kind]
		if l == nil {
			continue
		}
		p("| %s | %d | %d | %s | %v | %s | %s | %s | %d | %s |", kind, l.polls, l.missed, ms(l.lag.max), l.worstAt.Round(100*time.Millisecond),
			ms(l.churning), ms(l.lag.p99), ms(l.lag.mean), l.serials, caughtUpString(l.caughtUp))
	}
}

// countsFloat is "failed 0, ok 12".
func countsFloat(m map[string]float64) string {
	ints := map[string]int{}
	for k, v := range m {
		ints[k] = int(v)
	}
	return countsString(ints)
}

// secondaryTargets checks phase X's third condition against issue 26's goals.
func secondaryTargets(x *xResults) []target {
	lagT := target{what: "secondaries under 100 changes/s for 60 s at 100k records (Knot, NSD)", goal: "every secondary within 2 s of the primary throughout"}
	latT := target{what: "p99 query latency while secondaries follow 100 changes/s (full mix, same fixed rate)", goal: "p99 <= 2 x idle p99"}
	if x == nil || x.sec == nil || len(x.sec.lags) == 0 || x.sec.lat.n == 0 {
		lagT.status, latT.status = status(false, false), status(false, false)
		return []target{lagT, latT}
	}
	sx := x.sec
	achieved := ratio(float64(sx.changes), sx.churned.Seconds())
	var worst []string
	ok := len(sx.lags) == len(secondary.Kinds)
	for _, kind := range secondary.Kinds {
		if l := sx.lags[kind]; l != nil {
			worst = append(worst, fmt.Sprintf("%s worst %s (p99 %s)", kind, ms(l.lag.max), ms(l.lag.p99)))
			ok = ok && l.lag.max <= 2 && l.caughtUp >= 0
		}
	}
	lagT.measured = fmt.Sprintf("%s; %.0f changes/s for %v x %d rounds", strings.Join(worst, ", "), achieved, sx.duration, x.rounds)
	lagT.status = status(true, ok)
	v := ratio(sx.lat.p99, x.idle.p99)
	latT.measured = fmt.Sprintf("%.2f x (%s vs %s; lost %d vs %d)", v, ms(sx.lat.p99), ms(x.idle.p99), sx.lost, x.idleLost)
	latT.status = status(true, v <= 2)
	switch {
	case x.records < 100000:
		lagT.status = "not measured (fewer than 100k records)"
		latT.status = lagT.status
	case achieved < 0.95*float64(sx.rate) || sx.rate < 100 || sx.duration < time.Minute:
		lagT.status = fmt.Sprintf("not measured (%.0f changes/s for %v, not 100 for 1m0s)", achieved, sx.duration)
		latT.status = lagT.status
	}
	if x.idleLost*100 > x.idleSent {
		latT.status = "not measured (queries lost while idle: the machine was overloaded)"
	}
	return []target{lagT, latT}
}
