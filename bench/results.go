package main

import (
	"math"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/dnsperf"
)

// results is everything one run measured; report.go renders it.
type results struct {
	date     string
	started  time.Time
	took     time.Duration
	command  string
	machine  []string // "what: value" lines
	settings []string
	notes    []string

	a *aResults
	q *qResults
	s *sResults
	c *cResults
	p *pResults
	w *wResults
	x *xResults
	i *iResults
	b *bResults
	t *tResults
	h *hResults
}

// qResults: phase Q, query throughput and latency per backend and mix.
type qResults struct {
	records     int
	perf        dnsperf.Options
	rounds      int
	pinning     string
	latRate     map[string]int // mix name -> fixed rate of the latency runs
	latFraction float64
	rows        []qRow
}

type qRow struct {
	mix, backend string
	qps          float64   // median over the rounds
	qpsRounds    []float64 // each round's
	satAvg       float64   // dnsperf's mean latency at saturation, seconds
	lat          latencyStats
	lost, sent   int64 // over every run of this row
	rcodes       map[string]int64
}

func (q *qResults) row(mixName, backend string) *qRow {
	if q == nil {
		return nil
	}
	for i := range q.rows {
		if q.rows[i].mix == mixName && q.rows[i].backend == backend {
			return &q.rows[i]
		}
	}
	return nil
}

// sResults: phase S, gatewaydns by record count.
type sResults struct {
	rounds          int
	idleRSS         int64
	dbSize, dbInUse int64 // the etcd database after the last load
	rows            []sRow
}

type sRow struct {
	records   int
	load      time.Duration // writing them into etcd
	ready     time.Duration // process start to ready
	qps       float64       // median over the rounds
	qpsRounds []float64     // each round's
	lat       latencyStats  // dnsperf's mean only (n=0): saturation
	rssReady  int64
	rss       int64 // after the throughput runs
}

// pResults: phase P, propagation.
type pResults struct {
	rows []pRow
}

type pRow struct {
	what, path string
	records    int64 // records in etcd at the time
	n, failed  int
	lat        latencyStats
	skipped    string // why it did not run
}

// wResults: phase W, the writer from cold.
type wResults struct {
	routes, gateways int
	create           time.Duration // creating the routes and their status
	ready            time.Duration // writer process start to ready
	published        time.Duration // writer process start to every name in etcd
	etcd             etcdCounters  // what etcd counted meanwhile
	revisions        int64
	writes           float64 // the writer's coredns_gatewaydns_writer_writes_total
	cpu              wCPU
	peakRSS          int64 // the writer's, VmHWM
	// liveHeap and liveHeapEnd: the largest live heap a garbage collection of the writer left,
	// and the last one (2 s after the last name), from its gctrace.
	liveHeap, liveHeapEnd int64
	memLimit              string // the writer's GOMEMLIMIT (-writer-memlimit), "" for none
}

// xResults: phase X, query latency while the zone is transferred.
type xResults struct {
	records, names     int // in etcd; distinct names the transfers must hold
	rounds             int
	pinning            string
	axfrNice           int             // of the AXFR client
	perf               dnsperf.Options // of the latency runs
	latFraction        float64
	qps                float64 // at saturation, which the rate is a fraction of
	rate               int
	idle, busy         latencyStats // over every round
	idleLost, idleSent int64
	busyLost, busySent int64
	transfers          []xfer       // during the latency runs
	axfr               latencyStats // their durations
	axfrRecords        int          // records per transfer (the most; all are checked complete)
	axfrMessages       int
	axfrTypes          string        // records by type, of the first transfer
	sec                *xSecondaries // the third condition, with -secondaries
}

// axfrMedian is the median transfer, in seconds (the mean of the middle two for an even
// count); NaN without any.
func (x *xResults) axfrMedian() float64 { return medianTransfer(x.transfers) }

// medianTransfer is the median time of the transfers, in seconds (the mean of the middle two
// for an even count); NaN without any.
func medianTransfer(ts []xfer) float64 {
	if len(ts) == 0 {
		return math.NaN()
	}
	var took []float64
	for _, t := range ts {
		took = append(took, t.took.Seconds())
	}
	return median(took)
}

// axfrMin is the shortest transfer, in seconds; NaN without any.
func (x *xResults) axfrMin() float64 {
	if len(x.transfers) == 0 {
		return math.NaN()
	}
	m := x.transfers[0].took
	for _, t := range x.transfers[1:] {
		m = min(m, t.took)
	}
	return m.Seconds()
}
