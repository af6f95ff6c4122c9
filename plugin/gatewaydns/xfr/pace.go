package xfr

import (
	"runtime"
	"sync/atomic"
	"time"
)

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

// lastQuery is when a gatewaydns stanza of this process last got a question (UnixNano): the
// query clock. It is the process's, not a stanza's: the queries of every stanza share the CPU
// that a transfer gives way to.
var lastQuery atomic.Int64

// Queried notes a question, for the pacing of transfers: the handler calls it for every
// question but SOA ones. A secondary asks for the SOA right before the transfer that a NOTIFY
// starts: counted as a query, it would pace that very transfer, and a secondary on a quiet
// primary would follow a change hundreds of milliseconds late. It writes at most once a
// millisecond: a store by every query on every core would bounce the one cache line between
// them.
func Queried() {
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
