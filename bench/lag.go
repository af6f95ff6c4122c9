package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
)

// lagPoll is how often the serials are asked for while the secondaries follow a churn.
const lagPoll = 100 * time.Millisecond

// secLag is how one secondary followed the primary: at each poll, how long it had been behind,
// from the first poll at which the primary answered a serial newer than the secondary's until
// the secondary answered that serial or a newer one (a poll it did not answer counts with the
// serial it last answered).
type secLag struct {
	kind          string
	polls, missed int           // polls; those it did not answer
	lags          []float64     // seconds, one a poll, 0 when current
	lag           latencyStats  // of lags
	worstAt       time.Duration // when the worst lag was seen, since the watch began
	churning      float64       // the worst lag while the churn ran, seconds
	serials       int           // distinct serials it answered: the zones it took in
	caughtUp      time.Duration // from the end of the churn to the primary's serial; -1 if never
	last          uint32        // the serial it last answered
	answered      map[uint32]bool
}

type serialAtPoll struct {
	at     time.Duration
	serial uint32
}

// watchLag asks primary and each of secs for the zone's SOA every lagPoll until churned is
// closed and then every secondary answers the primary's serial (at most catchUp more), and
// returns how each followed.
func watchLag(primary string, secs []*secondaryProc, churned <-chan struct{}, catchUp time.Duration) ([]*secLag, error) {
	client := &dns.Client{Net: "udp", Timeout: 80 * time.Millisecond}
	start := time.Now()
	var seen []serialAtPoll // the primary's serials, each when first answered
	out := make([]*secLag, len(secs))
	for i, s := range secs {
		out[i] = &secLag{kind: s.kind, caughtUp: -1, answered: map[uint32]bool{}}
	}
	var ended time.Time
	tick := time.NewTicker(lagPoll)
	defer tick.Stop()
	for {
		select {
		case <-churned:
			if ended.IsZero() {
				ended = time.Now()
			}
			churned = nil
		case <-tick.C:
		}
		now := time.Now()
		if p, err := soaSerial(client, primary); err == nil && (len(seen) == 0 || p != seen[len(seen)-1].serial) {
			seen = append(seen, serialAtPoll{now.Sub(start), p})
		}
		if len(seen) == 0 {
			return nil, fmt.Errorf("the primary %s answered no SOA", primary)
		}
		current := seen[len(seen)-1].serial
		all := true
		for i, s := range secs {
			l := out[i]
			l.polls++
			if v, err := soaSerial(client, s.DNS); err == nil {
				l.last, l.answered[v] = v, true
			} else {
				l.missed++
			}
			lag := 0.0
			if index.SerialAfter(current, l.last) {
				// Behind since the primary first answered a serial after the secondary's.
				k := slices.IndexFunc(seen, func(p serialAtPoll) bool { return index.SerialAfter(p.serial, l.last) })
				lag = (now.Sub(start) - seen[k].at).Seconds()
				all = false
			} else if !ended.IsZero() && l.caughtUp < 0 {
				l.caughtUp = now.Sub(ended)
			}
			if lag > 0 && (len(l.lags) == 0 || lag > slices.Max(l.lags)) {
				l.worstAt = now.Sub(start)
			}
			l.lags = append(l.lags, lag)
			if ended.IsZero() {
				l.churning = max(l.churning, lag)
			}
		}
		if !ended.IsZero() && (all || time.Since(ended) > catchUp) {
			for _, l := range out {
				l.lag, l.serials = summarize(l.lags), len(l.answered)
			}
			return out, nil
		}
	}
}

// waitSynced waits until every secondary answers the primary's serial, and returns it.
func waitSynced(primary string, secs []*secondaryProc, timeout time.Duration) (uint32, error) {
	client := &dns.Client{Net: "udp", Timeout: 200 * time.Millisecond}
	deadline := time.Now().Add(timeout)
	for {
		p, err := soaSerial(client, primary)
		if err != nil {
			return 0, err
		}
		var behind []string
		for _, s := range secs {
			if !s.Running() {
				return 0, s.failure(fmt.Errorf("%w", errExited))
			}
			if v, err := soaSerial(client, s.DNS); err != nil || v != p {
				behind = append(behind, fmt.Sprintf("%s at %d (%v)", s.kind, v, err))
			}
		}
		if len(behind) == 0 {
			return p, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the secondaries are not at the primary's serial %d after %v: %s", p, timeout, strings.Join(behind, ", "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
