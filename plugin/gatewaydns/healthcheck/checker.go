package healthcheck

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/statelog"
)

var log = clog.NewWithPlugin("gatewaydns")

// Target is one address and the check run against it: a record's host and its owner's
// health check. The check connects to Addr (a host name is resolved by the system resolver).
type Target struct {
	Addr  string
	Check record.HealthCheck
}

// TargetOf is the target of a record's host (an address, or a host name) under its owner's
// steering; ok is false when the steering declares no health check (or one that does not
// read: record.Decode drops those).
func TargetOf(host string, s record.Steering) (t Target, ok bool) {
	if s.HealthCheck == "" {
		return Target{}, false
	}
	hc, err := record.ParseHealthCheck(s.HealthCheck)
	if err != nil {
		return Target{}, false
	}
	return Target{Addr: host, Check: hc}, true
}

// String names the target in logs and metrics: the URL the check uses, e.g.
// "tcp://10.0.0.1:443", "https://10.0.0.1:443/ready (Host app.example.com)".
func (t Target) String() string {
	s := t.Check.Scheme + "://" + t.Check.Target(t.Addr) + t.Check.Path
	if t.Check.Host != "" {
		s += " (Host " + t.Check.Host + ")"
	}
	return s
}

// Change is a target's change of state.
type Change struct {
	Target   Target
	From, To State
}

// Status is a target's state and what its last check found, for explain.
type Status struct {
	State State
	// Since: when the target went to State; zero while it is Unknown.
	Since time.Time
	// Checked: when its last check ended; zero before the first.
	Checked time.Time
	Took    time.Duration // how long the last check took
	Err     string        // why the last check failed; "" when it passed
	// Passed and Failed are the checks in a row that passed or failed, one of them 0.
	Passed, Failed int
}

// Checker runs the checks of a set of targets. Its methods are safe for concurrent use; none
// of them waits on a check.
type Checker struct {
	cfg      Config
	onChange func(Change)
	m        *metrics
	prober   *prober
	probe    func(context.Context, Target) error // prober.check; tests count calls through it
	// deadlineOnly: probe is prober.check, whose tcp check reads its context's deadline alone
	// (deadlineCtx).
	deadlineOnly bool
	ctx          context.Context
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	wake         chan struct{}
	jobs         chan *target
	gen          atomic.Uint64

	mu      sync.Mutex
	targets map[Target]*target
	due     dueHeap
	stopped bool

	// notify serialises the reports of changes (log, onChange) and Set's forgetting a target,
	// so that a report never follows its target's removal. Taken before mu.
	notify sync.Mutex
	logged statelog.States[Target, bool] // whether a target was last logged as down
}

// target is a Target as the Checker keeps it. Fields after Target are guarded by Checker.mu.
type target struct {
	Target
	name      string // Target.String()
	ownSeries bool   // in Config.MetricsFor
	due       time.Time
	index     int // in Checker.due; -1 when not there
	running   bool
	removed   bool
	run       run
	status    Status
}

// New starts a Checker with no targets; server names its series (the server block's
// address). onChange, when not nil, is called after each change of a target's state from the
// Checker's goroutines, one call at a time, in the order of each target's changes; it must
// not call Set or Stop. A target added later starts Unknown, which counts as up.
func New(cfg Config, server string, onChange func(Change)) (*Checker, error) {
	return newChecker(cfg, server, onChange, nil)
}

// newChecker is New with the function that runs a check (nil: the real checks).
func newChecker(cfg Config, server string, onChange func(Change), probe func(context.Context, Target) error) (*Checker, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	c := &Checker{
		cfg: cfg, onChange: onChange, m: newMetrics(server), prober: newProber(cfg.Timeout), probe: probe,
		ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), jobs: make(chan *target),
		targets: map[Target]*target{},
	}
	if c.probe == nil {
		c.probe, c.deadlineOnly = c.prober.check, true
	}
	c.wg.Add(1)
	go c.schedule()
	return c, nil
}

// Set makes targets the set of targets checked: new ones start Unknown, their first check at a
// random moment within an interval (so that a thousand targets added at once are not checked
// at once); ones not in targets any more are forgotten; the others keep their state. Duplicates
// count once.
func (c *Checker) Set(targets []Target) {
	c.notify.Lock()
	defer c.notify.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	want := make(map[Target]struct{}, len(targets))
	now := time.Now()
	changed := false
	for _, t := range targets {
		want[t] = struct{}{}
		if _, ok := c.targets[t]; ok {
			continue
		}
		nt := &target{Target: t, name: t.String(), ownSeries: c.ownSeries(t.Addr),
			due: now.Add(rand.N(c.cfg.Interval)), index: -1}
		c.targets[t] = nt
		heap.Push(&c.due, nt)
		c.m.added(nt)
		changed = true
	}
	for t, old := range c.targets {
		if _, ok := want[t]; ok {
			continue
		}
		old.removed = true
		delete(c.targets, t)
		if old.index >= 0 {
			heap.Remove(&c.due, old.index)
		}
		c.m.removed(old, old.run.state)
		c.logged.Forget(t)
		changed = true
	}
	if changed {
		c.gen.Add(1)
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

func (c *Checker) ownSeries(addr string) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	return slices.ContainsFunc(c.cfg.MetricsFor, func(p netip.Prefix) bool { return p.Contains(a) })
}

// State is the state of t; Unknown for a target not checked.
func (c *Checker) State(t Target) State {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ct := c.targets[t]; ct != nil {
		return ct.run.state
	}
	return Unknown
}

// Status is the state of t and what its last check found; ok is false for a target not checked.
func (c *Checker) Status(t Target) (st Status, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ct := c.targets[t]; ct != nil {
		return ct.status, true
	}
	return Status{}, false
}

// Generation changes whenever a target changes state or the set of targets changes: a reader
// that kept what it built from the states at one generation builds again when it differs. It
// is one atomic load, for the query path.
func (c *Checker) Generation() uint64 { return c.gen.Load() }

// Len is how many targets are checked.
func (c *Checker) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.targets)
}

// Stop ends every check and goroutine of the Checker and returns when they have ended: a check
// in flight is cancelled (its connection closed), so Stop takes about as long as the onChange
// call in progress, if any. Its targets leave the metrics. Stop is idempotent.
func (c *Checker) Stop() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	c.prober.close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ct := range c.targets {
		c.m.removed(ct, ct.run.state)
		delete(c.targets, t)
	}
}

// granularity is how often at most the scheduler wakes: checks due within it start together.
// At 20,000 checks a second, one wake per check would cost more than the checks.
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
