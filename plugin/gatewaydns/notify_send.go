package gatewaydns

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/coredns/coredns/plugin/pkg/rcode"
	"github.com/coredns/coredns/plugin/transfer"
	"github.com/miekg/dns"
)

// A NOTIFY waits notifyTry for its answer and is sent up to notifyTries times (RFC 1996 4.7:
// sent again until answered), as the transfer plugin does, but with a shorter wait: a secondary
// answers a NOTIFY at once, in milliseconds across a WAN; three seconds without an answer
// means it is down, and the next change notifies it again. Each secondary is sent to on its
// own, so the wait delays nothing else.
const (
	notifyTry   = time.Second
	notifyTries = 3
)

// flight is one zone's NOTIFY to one secondary; addr is empty for the transfer plugin's
// Notify, which sends to them all.
type flight struct{ zone, addr string }

// notifySender sends the NOTIFYs of one notifier, each in a goroutine of its own. A NOTIFY due
// while the same one is still in flight (a secondary slow to answer) is sent once more after
// it, not beside it.
type notifySender struct {
	ctx           context.Context
	server, zones string                  // the metrics' labels
	targets       map[string]notifyTarget // nil: through the transfer plugin's Notify
	t             *transfer.Transfer

	flights sync.WaitGroup
	mu      sync.Mutex
	again   map[flight]*uint32 // the NOTIFYs in flight; not nil: to be sent once more, at this serial
	failing map[string]bool    // secondaries whose last NOTIFY failed, so that it is logged once
}

func newNotifySender(ctx context.Context, g *GatewayDNS, t *transfer.Transfer) *notifySender {
	targets, ok := notifyTargets(t, g.Zones)
	if !ok {
		log.Warningf("The transfer plugin's secondaries cannot be read (a CoreDNS other than v1.15?): NOTIFYs go through its Notify, to one secondary after another")
	}
	return &notifySender{
		ctx: ctx, server: g.stanza.cfg.server, zones: strings.Join(g.Zones, " "),
		targets: targets, t: t,
		again: map[flight]*uint32{}, failing: map[string]bool{},
	}
}

// send NOTIFYs the secondaries of zone, now at serial.
func (s *notifySender) send(zone string, serial uint32) {
	if s.targets == nil {
		s.start(flight{zone: zone}, nil, serial)
		return
	}
	target := s.targets[zone]
	for _, addr := range target.to {
		s.start(flight{zone, addr}, target.source, serial)
	}
}

func (s *notifySender) start(f flight, source net.IP, serial uint32) {
	s.mu.Lock()
	if _, busy := s.again[f]; busy {
		s.again[f] = &serial
		s.mu.Unlock()
		return
	}
	s.again[f] = nil
	s.mu.Unlock()
	s.flights.Go(func() {
		for {
			s.report(f, serial, s.notify(f, source))
			s.mu.Lock()
			next := s.again[f]
			if next != nil && s.ctx.Err() == nil {
				s.again[f], serial = nil, *next
			} else {
				delete(s.again, f)
				next = nil
			}
			s.mu.Unlock()
			if next == nil {
				return
			}
		}
	})
}

// notify sends one NOTIFY until it is answered, at most notifyTries times; a stop ends it at
// once.
func (s *notifySender) notify(f flight, source net.IP) error {
	if f.addr == "" {
		return s.t.Notify(f.zone)
	}
	m := new(dns.Msg)
	m.SetNotify(f.zone)
	c := &dns.Client{Timeout: notifyTry}
	if source != nil {
		c.Dialer = &net.Dialer{Timeout: notifyTry, LocalAddr: &net.UDPAddr{IP: source}}
	}
	var err error
	for range notifyTries {
		if s.ctx.Err() != nil {
			return s.ctx.Err()
		}
		var r *dns.Msg
		if r, err = exchangeUntilDone(s.ctx, c, m, f.addr); err == nil {
			if r.Rcode == dns.RcodeSuccess {
				return nil
			}
			err = fmt.Errorf("rcode %s", rcode.ToString(r.Rcode))
		}
	}
	return fmt.Errorf("%d tries: %w", notifyTries, err)
}

// exchangeUntilDone is c.Exchange, ended early by ctx: miekg/dns only keeps to a context's
// deadline, so a stop closes the connection.
func exchangeUntilDone(ctx context.Context, c *dns.Client, m *dns.Msg, addr string) (*dns.Msg, error) {
	co, err := c.DialContext(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer co.Close()
	stop := context.AfterFunc(ctx, func() { co.Close() })
	defer stop()
	r, _, err := c.ExchangeWithConnContext(ctx, m, co)
	return r, err
}

// report counts a NOTIFY and logs a secondary's failure once, until it answers again.
func (s *notifySender) report(f flight, serial uint32, err error) {
	if s.ctx.Err() != nil {
		return // stopped: not the secondary's failure
	}
	s.mu.Lock()
	wasFailing := s.failing[f.addr]
	s.failing[f.addr] = err != nil
	s.mu.Unlock()
	to := f.addr
	if to == "" {
		to = "the secondaries"
	}
	switch {
	case err != nil:
		notifies.WithLabelValues(s.server, s.zones, "failed").Inc()
		if !wasFailing {
			log.Warningf("NOTIFY of %s (serial %d) to %s: %v; logged again once it answers", f.zone, serial, to, err)
		}
	default:
		notifies.WithLabelValues(s.server, s.zones, "ok").Inc()
		if wasFailing {
			log.Infof("NOTIFY of %s (serial %d) to %s answered again", f.zone, serial, to)
		}
		log.Debugf("Sent NOTIFY of %s at serial %d to %s", f.zone, serial, to)
	}
}
