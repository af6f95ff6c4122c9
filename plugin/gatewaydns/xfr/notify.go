package xfr

import (
	"context"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/handover"
)

// The notifier tells the secondaries (the transfer plugin's `to` addresses and the notify
// option's: secondaries.go) that a zone changed: one NOTIFY per zone and secondary for
// a burst of changes, sent to each secondary on its own (notifySender), so that one that does
// not answer delays no other. It looks at the zones' serials rather than hooking into the
// index: the index may be shared with the next instance across a reload, the notifier is the
// instance's, like the transfer plugin whose secondaries it tells.
const (
	notifyPoll  = 50 * time.Millisecond // how often the serials are read: a map lookup each
	notifyQuiet = 50 * time.Millisecond // a burst ends when the serial stays this long
	// Changes that never pause are notified once a second, at the turn of a second of the
	// wall clock (plus each secondary's offset, notifySpread), and no sooner than notifyMinGap
	// after the previous NOTIFY. A secondary under a steady churn is then at most a second
	// behind, plus its IXFR (a few records, journal.go) and its reload.
	//
	// Not more often: NSD reloads at most once per xfrd-reload-timeout (1 s), and two IXFRs
	// within one reload confuse its bookkeeping ("soa serial ... update failed, restarting
	// transfer", NLnetLabs/nsd#227), after which it takes the whole zone (bench phase X, 100
	// changes/s at 100k records, a NOTIFY every 250 ms: 28 AXFRs in 3 minutes, 7 s behind).
	//
	// At a fixed point of the second: NSD counts that timeout in whole seconds of its clock,
	// and a transfer it commits within the same second as its last reload waits a full second
	// more. Paced by the burst alone (a second after it began), the commits drift into the
	// second of the reload before, and every reload then waits: NSD was 2.1 s behind, where at a
	// fixed point of each second it reloads at once. Knot and BIND do not mind when it is.
	// The gap keeps a NOTIFY after a pause of the churn from coming right before the turn's
	// (NSD's reload of 100k records takes 30-90 ms); longer, and a churn with a pause in it left
	// a second without a NOTIFY (Knot 2.1 s behind, with 0.5 s).
	notifyMinGap = 250 * time.Millisecond
	// notifySpread: the secondaries of a zone get those NOTIFYs spread over this much of the
	// second, each at a fixed offset (NSD needs no more than that), so that their transfers
	// and reloads do not all come at once: Knot and NSD on one CPU, Knot took up to 0.95 s
	// rather than 0.6 s for an IXFR while NSD reloaded. Half a second leaves the offsets half
	// a second of room before the next turn.
	notifySpread = 500 * time.Millisecond
)

// notifier runs one goroutine per stanza while its instance runs, and one per NOTIFY in
// flight (notifySender).
type notifier struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startNotifier sends a NOTIFY for each zone of t once it has loaded, and after every change.
func startNotifier(t *Transfers, keyName, key string) *notifier {
	ctx, cancel := context.WithCancel(context.Background())
	n := &notifier{cancel: cancel, done: make(chan struct{})}
	s := newNotifySender(ctx, t, keyName, key)
	go func() {
		defer close(n.done)
		n.run(ctx, t, s)
		s.flights.Wait() // at once: a stop ends the NOTIFYs in flight
	}()
	return n
}

// pending is a zone whose serial moved and that has not been notified of it yet.
type pending struct {
	serial      uint32
	first, last time.Time // when the burst began, and when the serial last moved
}

// notified is a zone's last NOTIFY: its serial and when it went out.
type notified struct {
	serial uint32
	at     time.Time
}

func (n *notifier) run(ctx context.Context, t *Transfers, s *notifySender) {
	sent := map[string]notified{}
	waiting := map[string]*pending{}
	tick := time.NewTicker(notifyPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		b := t.records()
		if b == nil || !b.Loaded() {
			continue
		}
		now := time.Now()
		for _, zone := range t.notified() {
			if ctx.Err() != nil {
				return
			}
			serial, ok := t.serialOf(b, zone)
			if !ok {
				continue // bridged: its records are not loaded yet
			}
			p := waiting[zone]
			switch {
			case p == nil:
				if last, ok := sent[zone]; ok && last.serial == serial {
					continue
				}
				waiting[zone] = &pending{serial: serial, first: now, last: now}
				continue
			case p.serial != serial:
				p.serial, p.last = serial, now
			}
			quiet := now.Sub(p.last) >= notifyQuiet
			if !quiet && now.Before(churnNotifyDue(p.first, sent[zone].at)) {
				continue
			}
			delete(waiting, zone)
			sent[zone] = notified{p.serial, now}
			s.send(zone, p.serial, !quiet)
		}
	}
}

// churnNotifyDue is when a burst that began at first and has not paused gets its NOTIFY: the
// first turn of a second at or after first, and notifyMinGap after the previous NOTIFY
// (prev; zero for none).
func churnNotifyDue(first, prev time.Time) time.Time {
	from := first
	if next := prev.Add(notifyMinGap); next.After(from) {
		from = next
	}
	due := from.Truncate(time.Second)
	if due.Before(from) {
		due = due.Add(time.Second)
	}
	return due
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
