package healthcheck

import (
	"container/heap"
	"context"
	"math/rand/v2"
	"net/netip"
	"slices"
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
