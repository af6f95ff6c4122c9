package healthcheck

// The scheduler: each target's check started when due, on a bounded pool of workers, and its
// result applied.

import (
	"container/heap"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// granularity is how often at most the scheduler wakes: checks due within it start together.
// At 20,000 checks a second, one wake per check would cost more than the checks; but while the
// checks started together run, the runtime polls no socket, and on a server of one core a
// question waits for them: 20 checks a millisecond are a short wait where 100 every 5 ms were a
// p99 of several milliseconds (bench phase H).
const granularity = time.Millisecond

// schedule starts each target's check when it is due, at a fixed rate from its first (so that
// the random phases Set gave the targets stay spread), skipping a round that finds the last
// check still running.
func (c *Checker) schedule() {
	defer c.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var batch []*target
	workers := 0
	for {
		var wait time.Duration
		batch, wait = c.takeDue(batch[:0], time.Now())
		for _, t := range batch {
			if !c.dispatch(t, &workers) {
				return
			}
		}
		clear(batch)
		timer.Reset(max(wait, granularity))
		select {
		case <-timer.C:
		case <-c.wake:
		case <-c.ctx.Done():
			return
		}
	}
}

// takeDue appends the targets due at now to batch, marking them running, and moves each on to
// its next round; wait is how long until the next is due.
func (c *Checker) takeDue(batch []*target, now time.Time) ([]*target, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.due) > 0 && !c.due[0].due.After(now) {
		t := c.due[0]
		if t.running {
			c.m.skipped.Inc()
		} else {
			t.running = true
			c.m.delay.Observe(now.Sub(t.due).Seconds())
			batch = append(batch, t)
		}
		// The first round after now, on the target's own phase.
		t.due = t.due.Add((now.Sub(t.due)/c.cfg.Interval + 1) * c.cfg.Interval)
		heap.Fix(&c.due, 0)
	}
	if len(c.due) == 0 {
		return batch, time.Hour
	}
	return batch, c.due[0].due.Sub(now)
}

// dispatch hands t to an idle worker, or to a new one while there are fewer than
// Config.Concurrency, or waits for one to be free. Workers live until Stop: a pool that grew
// in a burst is kept for the next. false when the Checker stops meanwhile.
func (c *Checker) dispatch(t *target, workers *int) bool {
	select {
	case c.jobs <- t:
		return true
	default:
	}
	if *workers < c.cfg.Concurrency {
		*workers++
		c.wg.Add(1)
		go c.work(t)
		return true
	}
	select {
	case c.jobs <- t:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// work runs t's check, then those the scheduler hands it, until Stop.
func (c *Checker) work(t *target) {
	defer c.wg.Done()
	dc := &deadlineCtx{Context: c.ctx}
	for {
		c.check(t, dc)
		select {
		case t = <-c.jobs:
		case <-c.ctx.Done():
			return
		}
	}
}

// deadlineCtx is the checker's context with a check's deadline: what the prober's tcp check
// reads of its context (its deadline, and Done when the checker stops; Done does not close at
// the deadline, which a test's probe waits for). Each worker reuses its own, where a
// context.WithTimeout per check was three allocations and a timer, 20,000 times a second.
type deadlineCtx struct {
	context.Context
	deadline time.Time
}

func (d *deadlineCtx) Deadline() (time.Time, bool) { return d.deadline, true }

// check runs one check of t and applies its result; dc is the worker's context for a tcp check.
func (c *Checker) check(t *target, dc *deadlineCtx) {
	start := time.Now()
	var err error
	if c.deadlineOnly && t.Check.Scheme == record.CheckTCP {
		dc.deadline = start.Add(c.cfg.Timeout)
		err = c.probe(dc, t.Target)
	} else {
		// An http(s) check's transport reads its body by ctx's Done alone.
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.Timeout)
		err = c.probe(ctx, t.Target)
		cancel()
	}
	end := time.Now()
	if c.ctx.Err() != nil { // stopping: no result
		return
	}
	took := end.Sub(start)
	if err != nil && took > c.cfg.Timeout+c.cfg.Timeout/2 {
		// The check ended well after its deadline: the checker got no CPU in time (an
		// overloaded machine), and a failure then says nothing of the target. It counts
		// neither way, so that an overloaded server does not fail healthy clusters over.
		c.m.inconclusive.Inc()
		c.mu.Lock()
		t.status.Err = fmt.Sprintf("inconclusive: the check took %s of a %s timeout: %v", took.Round(time.Millisecond), c.cfg.Timeout, err)
		t.running = false
		c.mu.Unlock()
		return
	}
	c.m.checked(t, err == nil, took)

	c.mu.Lock()
	prev := t.run.state
	t.run = t.run.next(err == nil, c.cfg.DownAfter, c.cfg.UpAfter)
	cur, removed := t.run.state, t.removed
	t.status.State, t.status.Checked, t.status.Took = cur, end, took
	t.status.Passed, t.status.Failed, t.status.Err = t.run.passed, t.run.failed, ""
	if err != nil {
		t.status.Err = err.Error()
	}
	if cur != prev {
		t.status.Since = end
		if !removed {
			c.m.changed(prev, cur)
			c.gen.Add(1)
		}
	} else {
		t.running = false // nothing to report: the next round may start
	}
	c.mu.Unlock()

	if !removed && t.ownSeries {
		c.m.own(t, cur, took)
	}
	if cur != prev {
		// Still running while it is reported, so that the next round's change cannot be
		// reported before this one.
		c.report(t, Change{Target: t.Target, From: prev, To: cur}, err)
		c.mu.Lock()
		t.running = false
		c.mu.Unlock()
	}
}

// report logs a change once per change of "down" (a target that comes up from Unknown is not
// news) and tells onChange, unless t was forgotten meanwhile.
func (c *Checker) report(t *target, ch Change, err error) {
	c.notify.Lock()
	defer c.notify.Unlock()
	c.mu.Lock()
	removed := t.removed
	c.mu.Unlock()
	if removed {
		return
	}
	c.logged.Set(t.Target, ch.To == Down, func(bool) {
		if ch.To == Down {
			log.Warningf("Health check %s: down after %s failed in a row (last: %v); its owner's answers leave it out", t.name, checksWord(c.cfg.DownAfter), err)
		} else {
			log.Infof("Health check %s: up again after %s passed in a row", t.name, checksWord(c.cfg.UpAfter))
		}
	})
	if c.onChange != nil {
		c.onChange(ch)
	}
}

func checksWord(n int) string {
	if n == 1 {
		return "1 check"
	}
	return strconv.Itoa(n) + " checks"
}

// dueHeap orders targets by when they are due.
type dueHeap []*target

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *dueHeap) Push(x any) {
	t := x.(*target)
	t.index = len(*h)
	*h = append(*h, t)
}

func (h *dueHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
