package xfr

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/coredns/coredns/plugin/pkg/rcode"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/backoff"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/statelog"
)

// A NOTIFY waits notifyTry for its answer, and is sent again until it is answered (RFC 1996
// 4.7), after a back-off of notifyRetryMin doubling up to notifyRetryMax: a secondary that was
// down gets the NOTIFY within notifyRetryMax of its return, rather than at its refresh (hours),
// for one small packet every few seconds meanwhile. After notifyTries tries the NOTIFY counts as
// failed and is logged (once, until that secondary answers again); it is still sent. Each
// secondary is sent to on its own, so the wait delays nothing else.
const (
	notifyTry      = time.Second
	notifyTries    = 3
	notifyRetryMin = 250 * time.Millisecond
	notifyRetryMax = 2 * time.Second
)

// flight is one zone's NOTIFY to one secondary.
type flight struct{ zone, addr string }

// notifySender sends the NOTIFYs of one notifier, each in a goroutine of its own. A NOTIFY due
// while the same one is still in flight (a secondary slow to answer) is sent once more after
// it, not beside it; and where the one in flight waits to be tried again (the secondary did not
// answer, or refused it), the next try goes at once, with the newer serial: a secondary that
// comes back hears of a change when it happens, not when the back-off ends.
type notifySender struct {
	ctx           context.Context
	server, zones string                  // the metrics' labels
	targets       map[string][]notifyAddr // by zone
	keyName, key  string                  // the TSIG key NOTIFYs are signed with; "": unsigned
	soa           func(zone string, serial uint32) dns.RR

	flights sync.WaitGroup
	mu      sync.Mutex
	again   map[flight]*uint32            // the NOTIFYs in flight; not nil: to be sent once more, at this serial
	newer   map[flight]chan struct{}      // wakes a NOTIFY in flight that waits to be tried again
	failing statelog.States[string, bool] // whether each secondary's last NOTIFY failed, so that it is logged once
}

func newNotifySender(ctx context.Context, t *Transfers, keyName, key string) *notifySender {
	targets := map[string][]notifyAddr{}
	for _, zone := range t.notified() {
		targets[zone] = t.cfg.notifyTargets(zone)
	}
	return &notifySender{
		soa: t.soaAt,
		ctx: ctx, server: t.st.Server, zones: t.zones,
		targets: targets, keyName: keyName, key: key,
		again: map[flight]*uint32{}, newer: map[flight]chan struct{}{},
	}
}

// send NOTIFYs the secondaries of zone, now at serial; spread, the i-th of n secondaries
// i/n of notifySpread later.
func (s *notifySender) send(zone string, serial uint32, spread bool) {
	to := s.targets[zone]
	for i, t := range to {
		var after time.Duration
		if spread {
			after = notifySpread * time.Duration(i) / time.Duration(len(to))
		}
		s.start(flight{zone, t.addr}, t.source, serial, after)
	}
}

// start begins f's flight after the given time, or has the one in flight send serial next.
func (s *notifySender) start(f flight, source net.IP, serial uint32, after time.Duration) {
	s.mu.Lock()
	if _, busy := s.again[f]; busy {
		s.again[f] = &serial
		select {
		case s.newer[f] <- struct{}{}:
		default: // woken already
		}
		s.mu.Unlock()
		return
	}
	s.again[f] = nil
	newer := make(chan struct{}, 1)
	s.newer[f] = newer
	s.mu.Unlock()
	s.flights.Go(func() {
		if after > 0 {
			t := time.NewTimer(after)
			select {
			case <-s.ctx.Done(): // notify returns at once, takeNewer ends the flight
			case <-t.C:
			}
			t.Stop()
			if next, ok := s.takeNewer(f, newer, false); ok {
				serial = next
			}
		}
		for {
			s.notify(f, source, serial, newer)
			next, ok := s.takeNewer(f, newer, true)
			if !ok {
				return
			}
			serial = next
		}
	})
}

// takeNewer takes the serial of a NOTIFY of f due meanwhile, with its wake-up, so that it is
// sent once rather than once more after; ok is false when none is due (or the sender stopped).
// With last, f's flight then ends, under the same lock, so that a NOTIFY due in between starts
// a flight of its own rather than being lost.
func (s *notifySender) takeNewer(f flight, newer <-chan struct{}, last bool) (serial uint32, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-newer:
	default:
	}
	if next := s.again[f]; next != nil && s.ctx.Err() == nil {
		s.again[f] = nil
		return *next, true
	}
	if last {
		delete(s.again, f)
		delete(s.newer, f)
	}
	return 0, false
}

// notify sends one NOTIFY until it is answered, signed when the sender has a key, and reports
// it; a stop ends it at once. Between two tries a newer serial due (newer) is sent at once, in
// the old one's stead.
func (s *notifySender) notify(f flight, source net.IP, serial uint32, newer <-chan struct{}) {
	c := &dns.Client{Timeout: notifyTry}
	if source != nil {
		c.Dialer = &net.Dialer{Timeout: notifyTry, LocalAddr: &net.UDPAddr{IP: source}}
	}
	if s.keyName != "" {
		c.TsigSecret = map[string]string{s.keyName: s.key}
	}
	wait := backoff.New(notifyRetryMin, notifyRetryMax)
	var err error
	for try := 1; ; try++ {
		if s.ctx.Err() != nil {
			return
		}
		m := new(dns.Msg)
		m.SetNotify(f.zone)
		// The new SOA, as BIND sends it (RFC 1996 3.7): a secondary that is transferring
		// when the NOTIFY comes can tell that it asks for more than the transfer brings (NSD
		// was seen to stay on the old serial otherwise), and logs the serial it was told.
		m.Answer = []dns.RR{s.soa(f.zone, serial)}
		if s.keyName != "" {
			m.SetTsig(s.keyName, dns.HmacSHA256, 300, time.Now().Unix())
		}
		var r *dns.Msg
		if r, err = exchangeUntilDone(s.ctx, c, m, f.addr, newer); err == nil {
			if r.Rcode == dns.RcodeSuccess {
				s.report(f, serial, nil)
				return
			}
			err = fmt.Errorf("rcode %s", rcode.ToString(r.Rcode))
		}
		if try == notifyTries {
			s.report(f, serial, fmt.Errorf("%d tries: %w; sent again until it is answered", notifyTries, err))
		}
		if next, ok := s.takeNewer(f, newer, false); ok {
			serial = next // this try may have been cut short for it: no back-off
			continue
		}
		if !wait.Wait(s.ctx, newer) && s.ctx.Err() != nil {
			return
		}
		if next, ok := s.takeNewer(f, newer, false); ok {
			serial = next
		}
	}
}

// exchangeUntilDone is c.Exchange, ended early by ctx or by a newer NOTIFY due (newer): miekg/dns
// only keeps to a context's deadline, so either closes the connection. A secondary that drops a
// NOTIFY (Knot while it loads the zone) would otherwise hold the newer one up for notifyTry.
func exchangeUntilDone(ctx context.Context, c *dns.Client, m *dns.Msg, addr string, newer <-chan struct{}) (*dns.Msg, error) {
	co, err := c.DialContext(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer co.Close()
	stop := context.AfterFunc(ctx, func() { co.Close() })
	defer stop()
	answered := make(chan struct{})
	defer close(answered)
	go func() {
		select {
		case <-newer:
			co.Close()
		case <-answered:
		}
	}()
	r, _, err := c.ExchangeWithConnContext(ctx, m, co)
	return r, err
}

// report counts a NOTIFY and logs a secondary's failure once, until it answers again.
func (s *notifySender) report(f flight, serial uint32, err error) {
	if s.ctx.Err() != nil {
		return // stopped: not the secondary's failure
	}
	to := f.addr
	if err != nil {
		notifies.WithLabelValues(s.server, s.zones, "failed").Inc()
		s.failing.Set(f.addr, true, func(bool) {
			log.Warningf("NOTIFY of %s (serial %d) to %s: %v; logged again once it answers", f.zone, serial, to, err)
		})
		return
	}
	notifies.WithLabelValues(s.server, s.zones, "ok").Inc()
	s.failing.Set(f.addr, false, func(bool) {
		log.Infof("NOTIFY of %s (serial %d) to %s answered again", f.zone, serial, to)
	})
	log.Debugf("Sent NOTIFY of %s at serial %d to %s", f.zone, serial, to)
}
