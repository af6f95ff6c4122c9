// Package healthfeed runs a feed's health checks (package healthcheck) beside its watchers:
// the targets its index's records declare go to the checker as they come and go, and each
// change of a target's state goes to the index (index.Index.ApplyHealth), which answers from
// it at once and moves the serials of the zones it changes. The checks never run on the query
// path: a question reads the index's view of them. They live as long as the feed, so that a
// reload that shares the feed keeps every target's state.
package healthfeed

import (
	"context"
	"sync"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/healthcheck"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Feed is a feed's health checks, configured by Config; the zero Feed checks what its
// Config says once started.
type Feed struct {
	Config  healthcheck.Config
	checker *healthcheck.Checker

	mu      sync.Mutex
	pending []index.HealthChange
	wake    chan struct{}
}

// setTargetsEvery is how often at most the checker's targets are set again while records with
// health checks churn: each time is a pass over every target.
const setTargetsEvery = 50 * time.Millisecond

// Start starts the checker and the goroutine (in wg) that feeds it and applies its changes to
// ix until ctx ends.
func (h *Feed) Start(ctx context.Context, wg *sync.WaitGroup, ix *index.Index, server string) error {
	h.wake = make(chan struct{}, 1)
	c, err := healthcheck.New(h.Config, server, h.changed)
	if err != nil {
		return err
	}
	h.checker = c
	wg.Go(func() { h.follow(ctx, ix) })
	return nil
}

// Stop stops the checker and its checks; the goroutine of start has returned.
func (h *Feed) Stop() {
	if h.checker != nil {
		h.checker.Stop()
	}
}

// changed is the checker's onChange: the change waits for follow, which applies it with the
// others that came meanwhile.
func (h *Feed) changed(ch healthcheck.Change) {
	hc := index.HealthChange{Target: index.CheckTarget{Host: ch.Target.Addr, Check: ch.Target.Check.String()}, Down: ch.To == healthcheck.Down}
	h.mu.Lock()
	h.pending = append(h.pending, hc)
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// follow sets the checker's targets from ix whenever they change, at most every
// setTargetsEvery, and applies the checker's changes to ix as they come.
func (h *Feed) follow(ctx context.Context, ix *index.Index) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var more <-chan struct{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
			h.apply(ix)
		case <-more:
			more = nil
			timer.Reset(setTargetsEvery)
		case <-timer.C:
			var targets []index.CheckTarget
			targets, more = ix.CheckTargets()
			h.checker.Set(checkTargets(targets))
		}
	}
}

// apply hands the changes that came to ix, in order.
func (h *Feed) apply(ix *index.Index) {
	h.mu.Lock()
	changes := h.pending
	h.pending = nil
	h.mu.Unlock()
	if len(changes) > 0 {
		ix.ApplyHealth(changes)
	}
}

// checkTargets are the checker's targets of the index's.
func checkTargets(ts []index.CheckTarget) []healthcheck.Target {
	out := make([]healthcheck.Target, 0, len(ts))
	for _, t := range ts {
		if ct, ok := healthcheck.TargetOf(t.Host, record.Steering{HealthCheck: t.Check}); ok {
			out = append(out, ct)
		}
	}
	return out
}
