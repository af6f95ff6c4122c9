package xfr

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/handover"
)

// A transfer's records are handed to the transfer plugin by a goroutine of ours (Transfer),
// which holds a copy of the zone until it is done. The transfer plugin gives it no way to learn
// that the secondary went away or stopped reading: it reads our channel to the end when the
// secondary disconnects, and blocks for good when one keeps its connection open but reads no
// more (miekg/dns sets no write deadline on a TCP connection, and CoreDNS's server offers no
// hook to set one). So the stanza owns these goroutines (runs): each ends, letting go of
// its copy, when the stanza stops (a reload or shutdown) or when the transfer plugin has taken
// nothing from it for xfrStall.
//
// xfrStall is long enough for a secondary behind a slow link to take one message of a transfer
// (at most 64 KB: 20 s at 25 kbit/s), and short enough that a secondary that stopped reading
// pins a copy of the zone for half a minute rather than for as long as it holds the connection.
//
// xfrRunning bounds the transfers that run at once in the process, each with its copy of a zone:
// more are refused (SERVFAIL) until one ends, so that secondaries asking again and again, or
// stalling, cannot grow the memory without bound. BIND's transfers-out is 10 too.
const (
	xfrStall   = 30 * time.Second
	xfrRunning = 10
)

// errTransferBusy and errTransferStopped are why a transfer is refused.
var (
	errTransferBusy    = errors.New("too many zone transfers running; ask again later")
	errTransferStopped = errors.New("the server is stopping")
)

// xfrSlots holds one token per transfer running in the process.
var xfrSlots = make(chan struct{}, xfrRunning)

// runs are the transfers that one stanza runs.
type runs struct {
	stall  time.Duration // xfrStall; shorter in tests
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	stopped bool
	running sync.WaitGroup
}

func newRuns() *runs {
	ctx, cancel := context.WithCancel(context.Background())
	return &runs{stall: xfrStall, ctx: ctx, cancel: cancel}
}

// xfrRun is one running transfer: it sends to the transfer plugin through ch.
type xfrRun struct {
	runs  *runs
	ch    chan []dns.RR
	stall *time.Timer
}

// begin takes a slot for a transfer, or tells why there is none.
func (r *runs) begin() (*xfrRun, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil, errTransferStopped
	}
	select {
	case xfrSlots <- struct{}{}:
	default:
		return nil, errTransferBusy
	}
	r.running.Add(1)
	return &xfrRun{runs: r, ch: make(chan []dns.RR)}, nil
}

// run runs produce in a goroutine of the stanza's, which closes the channel and gives the slot
// back when produce returns.
func (x *xfrRun) run(produce func(*xfrRun)) <-chan []dns.RR {
	x.stall = time.NewTimer(x.runs.stall)
	go func() {
		defer x.end()
		defer close(x.ch)
		defer x.stall.Stop()
		produce(x)
	}()
	return x.ch
}

// end gives the slot back: when the producer returns, or when the transfer failed before one
// ran (the copy of the zone holds the slot as well).
func (x *xfrRun) end() {
	<-xfrSlots
	x.runs.running.Done()
}

// send hands records to the transfer plugin; false means the transfer is to end: the stanza
// stopped, or the plugin took nothing for the stall bound.
func (x *xfrRun) send(rrs []dns.RR) bool {
	x.stall.Reset(x.runs.stall)
	select {
	case x.ch <- rrs:
		return true
	case <-x.runs.ctx.Done():
		return false
	case <-x.stall.C:
		log.Warningf("Ended a zone transfer: the secondary took nothing for %s", x.runs.stall)
		return false
	}
}

// stop ends the running transfers and waits for them, within handover.StopWait; no transfer starts
// afterwards.
func (r *runs) stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.cancel()
	done := make(chan struct{})
	go func() {
		r.running.Wait()
		close(done)
	}()
	if !handover.WaitClosed(done, handover.StopWait) {
		log.Warningf("Zone transfers did not end within %s of the stop; leaving them", handover.StopWait)
	}
}
