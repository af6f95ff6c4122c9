package gatewaydns

import (
	"context"
	"strings"
	"time"

	"github.com/coredns/coredns/plugin/transfer"
	"github.com/coredns/coredns/request"
)

// The notifier tells the transfer plugin's secondaries (its `to` addresses) that a zone
// changed, with the transfer plugin's own NOTIFY: within a second of a change, one NOTIFY per
// zone for a burst of changes. It looks at the zones' serials rather than hooking into the
// index: the index may be shared with the next instance across a reload, the notifier is the
// instance's, like the transfer plugin it sends through.
const (
	notifyPoll   = 50 * time.Millisecond  // how often the serials are read: a map lookup each
	notifyQuiet  = 50 * time.Millisecond  // a burst ends when the serial stays this long
	notifyAtMost = 500 * time.Millisecond // and a NOTIFY goes out this long after a burst began, whatever
)

// notifier runs one goroutine per stanza while its instance runs.
type notifier struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startNotifier sends a NOTIFY for each zone once it has loaded, and after every change.
func startNotifier(g *GatewayDNS, t *transfer.Transfer) *notifier {
	ctx, cancel := context.WithCancel(context.Background())
	n := &notifier{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(n.done)
		n.run(ctx, g, t)
	}()
	return n
}

// pending is a zone whose serial moved and that has not been notified of it yet.
type pending struct {
	serial      uint32
	first, last time.Time // when the burst began, and when the serial last moved
}

func (n *notifier) run(ctx context.Context, g *GatewayDNS, t *transfer.Transfer) {
	server, zones := g.stanza.cfg.server, strings.Join(g.Zones, " ")
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
			if err := t.Notify(zone); err != nil {
				notifies.WithLabelValues(server, zones, "failed").Inc()
				log.Warningf("NOTIFY of %s (serial %d): %v", zone, p.serial, err)
				continue
			}
			notifies.WithLabelValues(server, zones, "ok").Inc()
			log.Debugf("Sent NOTIFY of %s at serial %d", zone, p.serial)
		}
	}
}

// stop ends the notifier within stopWait: a NOTIFY in flight to a secondary that does not
// answer may take longer (the transfer plugin tries 3 times), and is left to finish alone.
func (n *notifier) stop() {
	if n == nil {
		return
	}
	n.cancel()
	if !waitClosed(n.done, stopWait) {
		log.Warningf("A NOTIFY in flight did not end within %s of the stop; leaving it", stopWait)
	}
}
