package gatewaydns

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/transfer"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
)

// Transfer implements transfer.Transferer, so that the stock transfer plugin serves AXFR and
// IXFR of the stanza's zones from the index: a copy of the zone's names at one revision
// (index.Index.Zone), turned into records while the transfer is sent, paced so that queries
// go first (pacer), by a goroutine the stanza owns (transferRuns). An IXFR is answered with
// the SOA alone when the secondary is current, with the difference since its serial where the
// index's journal holds every change since (transfer_ixfr.go), and with the whole zone
// otherwise, as RFC 1995 allows.
func (g *GatewayDNS) Transfer(zone string, serial uint32) (<-chan []dns.RR, error) {
	b := g.current()
	if b == nil || !slices.Contains(g.Zones, zone) {
		return nil, transfer.ErrNotAuthoritative
	}
	if !b.serves(zone) {
		return nil, errNotLoaded
	}
	server, zones := g.stanza.cfg.server, strings.Join(g.Zones, " ")
	run, err := g.stanza.transfers.begin()
	if err != nil {
		if errors.Is(err, errTransferBusy) {
			transfers.WithLabelValues(server, zones, "busy").Inc()
		}
		return nil, err
	}
	if !b.Loaded() {
		run.end()
		return nil, errNotLoaded
	}
	opt := plugin.Options{NoApexFallback: g.NoApexFallback}
	if serial != 0 {
		if current := uint32(b.Revision(zone)); !index.SerialAfter(current, serial) { // #nosec G115 -- RFC 1982
			transfers.WithLabelValues(server, zones, "current").Inc()
			soa := g.apexOf().soaAt(zone, current, b.MinTTL(request.Request{}))
			return run.run(func(x *xfrRun) { x.send([]dns.RR{soa}) }), nil
		}
		if past, now, ok := g.incremental(b, zone, serial); ok {
			transfers.WithLabelValues(server, zones, "incremental").Inc()
			return run.run(func(x *xfrRun) { g.sendIncremental(x, zone, serial, past, now, opt) }), nil
		}
	}
	pace := &pacer{worked: time.Now(), stopped: run.runs.ctx.Done()}
	z, ok := b.Zone(zone, pace.pause)
	if !ok {
		run.end()
		return nil, errNotLoaded
	}
	transfers.WithLabelValues(server, zones, "full").Inc()
	return run.run(func(x *xfrRun) { g.sendFull(x, z, pace, opt) }), nil
}

// sendFull sends the whole zone z, between two SOAs.
func (g *GatewayDNS) sendFull(x *xfrRun, z *index.Zone, pace *pacer, opt plugin.Options) {
	soa := []dns.RR{g.apexOf().soa(z, z.Origin, request.Request{})}
	if !x.send(soa) {
		return
	}
	w := newZoneWriter(z, g.apexOf(), dns.IsSubDomain("arpa.", z.Origin), g.stanza.cfg.transferSynthetic, opt)
	batch := make([]dns.RR, 0, xfrBatch)
	for i := range z.Len() {
		batch = w.appendName(batch, i)
		if len(batch) < xfrBatch {
			continue
		}
		if !x.send(batch) {
			return
		}
		batch = make([]dns.RR, 0, xfrBatch)
		pace.pause()
	}
	if len(batch) > 0 && !x.send(batch) {
		return
	}
	x.send(soa)
}

// Pacing of a transfer, so that queries go first. The server may run on one CPU
// (GOMAXPROCS=1): while a goroutine is runnable, the scheduler looks for network input only
// every 10 ms or so (sysmon), and queries wait behind the transfer. So a transfer hands its
// records over in batches of xfrBatch (and copies the zone in chunks), and after each xfrSlice
// of that it sleeps: with nothing runnable the scheduler polls the network, and the queries
// that came in meanwhile are answered before the transfer goes on.
//
// The sleep keeps the transfer to 1/xfrShare of a busy CPU, counting all of its work: before
// it measures the slice, the pacer lets the transfer plugin's goroutines run (runtime.Gosched:
// on one CPU they then append, pack and write what they were handed, and their share of the
// garbage collector's assists), which run in the sleep otherwise, beside the queries. Pacing
// the producer's own work alone (0.125 ms, then 2 ms of sleep) raised the median query latency
// of bench phase X 3 to 15 times while transferring (0.13-0.17 ms idle, 0.45-2.0 ms); this
// pacing leaves it within 1.25x (0.12-0.14 ms, 0.14-0.16 ms), in runs side by side on a shared
// machine. Queries at half the CPU wait, by queueing theory, about (0.5+s)/(0.5-s) times as
// long with a share s beside them: 1.3x for a sixteenth, 2x at a sixth.
//
// A server that nobody queries has nothing to give way to: it paces a transfer only while
// queries come in (one within xfrQuiet), so that a secondary NOTIFYed of a change on a quiet
// primary gets the zone at full speed. Only questions that reach a gatewaydns stanza count.
const (
	xfrBatch = 64
	xfrSlice = 250 * time.Microsecond
	xfrShare = 16
	xfrQuiet = 100 * time.Millisecond
	// xfrMaxSleep bounds one sleep: a slice that took long (the process waited for the CPU,
	// or ran a garbage collection) slows the transfer down, without stopping it.
	xfrMaxSleep = 20 * time.Millisecond
)

// lastQuery is when a gatewaydns stanza of this process last got a question (UnixNano).
var lastQuery atomic.Int64

// queried notes a question, for the pacing of transfers. It writes at most once a
// millisecond: a store by every query on every core would bounce the one cache line between
// them.
func queried() {
	if now := time.Now().UnixNano(); now-lastQuery.Load() >= int64(time.Millisecond) {
		lastQuery.Store(now)
	}
}

// pacer sleeps once xfrSlice has passed since it last did, while questions come in: called
// between the chunks of the zone's copy (index.Index.Zone) and between the batches of records.
// Once the stanza stops it sleeps no more, so that a copy under way ends at once.
type pacer struct {
	worked  time.Time
	stopped <-chan struct{}
}

func (p *pacer) pause() {
	now := time.Now()
	if now.Sub(p.worked) < xfrSlice {
		return
	}
	if now.UnixNano()-lastQuery.Load() < int64(xfrQuiet) {
		runtime.Gosched()
		t := time.NewTimer(min(time.Since(p.worked)*(xfrShare-1), xfrMaxSleep))
		select {
		case <-t.C:
		case <-p.stopped:
			t.Stop()
		}
		now = time.Now()
	}
	p.worked = now
}
