package gatewaydns

import (
	"context"
	"time"

	"github.com/coredns/coredns/plugin/transfer"
	"github.com/coredns/coredns/request"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/handover"
)

// The notifier tells the secondaries (the notify option's addresses, else the transfer
// plugin's `to` through its Notify) that a zone changed: within a second of a change, one NOTIFY per zone and secondary for a burst of
// changes, sent to each secondary on its own (notifySender), so that one that does not answer
// delays no other. It looks at the zones' serials rather than hooking into the
// index: the index may be shared with the next instance across a reload, the notifier is the
// instance's, like the transfer plugin it sends through.
const (
	notifyPoll  = 50 * time.Millisecond // how often the serials are read: a map lookup each
	notifyQuiet = 50 * time.Millisecond // a burst ends when the serial stays this long
	// notifyAtMost: a NOTIFY goes out this long after a burst began, whatever. Under a
	// steady churn a secondary is that much behind, plus its IXFR (a few records, journal.go)
	// and its own reload delay. Not sooner: NSD reloads at most once a second
	// (xfrd-reload-timeout), and two IXFRs in one reload confuse its bookkeeping ("soa serial
	// ... update failed, restarting transfer", NLnetLabs/nsd#227), after which it takes the whole
	// zone. Bench phase X, 100 changes/s at 100k records: every 250 ms, NSD took 28 AXFRs in 3
	// minutes and fell 7 s behind; every second, none, and no secondary more than 1.7 s behind.
	notifyAtMost = time.Second
)

// notifier runs one goroutine per stanza while its instance runs, and one per NOTIFY in
// flight (notifySender).
type notifier struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startNotifier sends a NOTIFY for each zone once it has loaded, and after every change.
func startNotifier(g *GatewayDNS, t *transfer.Transfer, keyName, key string) *notifier {
	ctx, cancel := context.WithCancel(context.Background())
	n := &notifier{cancel: cancel, done: make(chan struct{})}
	s := newNotifySender(ctx, g, t, keyName, key)
	go func() {
		defer close(n.done)
		n.run(ctx, g, s)
		s.flights.Wait() // at once: a stop ends the NOTIFYs in flight
	}()
	return n
}

// pending is a zone whose serial moved and that has not been notified of it yet.
type pending struct {
	serial      uint32
	first, last time.Time // when the burst began, and when the serial last moved
}

func (n *notifier) run(ctx context.Context, g *GatewayDNS, s *notifySender) {
	sent := map[string]uint32{}
	waiting := map[string]*pending{}
	tick := time.NewTicker(notifyPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		b := g.current()
		if b == nil || !b.Loaded() {
			continue
		}
		now := time.Now()
		for _, zone := range g.Zones {
			if ctx.Err() != nil {
				return
			}
			if !b.serves(zone) {
				continue // bridged: its records are not loaded yet
			}
			serial := b.Serial(request.Request{Zone: zone})
			p := waiting[zone]
			switch {
			case p == nil:
				if last, ok := sent[zone]; ok && last == serial {
					continue
				}
				waiting[zone] = &pending{serial: serial, first: now, last: now}
				continue
			case p.serial != serial:
				p.serial, p.last = serial, now
			}
			if now.Sub(p.last) < notifyQuiet && now.Sub(p.first) < notifyAtMost {
				continue
			}
			delete(waiting, zone)
			sent[zone] = p.serial
			s.send(zone, p.serial)
		}
	}
}

// stop ends the notifier and the NOTIFYs in flight (their wait for an answer ends at once),
// within handover.StopWait.
func (n *notifier) stop() {
	if n == nil {
		return
	}
	n.cancel()
	if !handover.WaitClosed(n.done, handover.StopWait) {
		log.Warningf("NOTIFYs in flight did not end within %s of the stop; leaving them", handover.StopWait)
	}
}
