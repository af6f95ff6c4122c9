package mirror

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

func onlyStart(t *testing.T, o *observer) {
	t.Helper()
	if got := o.resyncReasons(); !slices.Equal(got, []string{"start"}) {
		t.Fatalf("full loads %v, want only the one at start", got)
	}
}

// links are the ways a link fails under a watch: a cut (connections reset, refused until
// restored: clientv3 resumes its own stream) and a black hole (a frozen host: the watcher must
// notice the silence and resume itself).
var links = []struct {
	name   string
	break_ func(*env, *observer)
}{
	{name: "cut", break_: func(e *env, _ *observer) { e.proxy.Cut() }},
	{name: "black hole", break_: (*env).blackHole},
}

// blackHole makes the link a black hole and waits until the watcher has noticed.
func (e *env) blackHole(o *observer) {
	o.mu.Lock()
	before := len(o.failures)
	o.mu.Unlock()
	e.proxy.BlackHole()
	waitForFailure(o, before)
}

// waitForFailure gives the watcher up to 10 s to notice a black hole (it should in about
// ProgressEvery + StallAfter); the test's later checks tell whether it resumed right.
func waitForFailure(o *observer, before int) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		o.mu.Lock()
		n := len(o.failures)
		o.mu.Unlock()
		if n > before {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func quick(w *Watcher) { w.ProgressEvery, w.StallAfter = 100*time.Millisecond, 300*time.Millisecond }

func TestLinkLostInTheMiddleOfACatchUpResumesWithoutSkippingOrReloading(t *testing.T) {
	for _, link := range links {
		t.Run(link.name, func(t *testing.T) {
			e := newEnv(t)
			ix := newIndex()
			o, _ := e.start(t, ix, ix, quick)

			// Fall behind by 6000 revisions, then catch up through a slow link, broken part-way.
			const n = 6000
			e.proxy.Cut()
			e.put(t, 0, n)
			e.proxy.SetDelay(20 * time.Millisecond)
			e.proxy.Restore()
			waitFor(t, 30*time.Second, "start of the catch-up", func() bool { return o.puts.Load() > 0 })
			at := o.puts.Load()
			link.break_(e, o)
			broke := o.puts.Load()
			if at >= n {
				t.Fatalf("the link broke after the catch-up (%d events applied): the test proves nothing", at)
			}
			e.proxy.SetDelay(0)
			e.proxy.Restore()
			e.waitEqual(t, ix, 60*time.Second)
			onlyStart(t, o)
			o.mu.Lock()
			t.Logf("link broken after %d of %d events; %d applied at the break's end; failures %q", at, n, broke, o.failures)
			o.mu.Unlock()
		})
	}
}

func TestLinkLostDuringAQuietSpellResumesWithoutReloading(t *testing.T) {
	for _, link := range links {
		t.Run(link.name, func(t *testing.T) {
			e := newEnv(t)
			ix := newIndex()
			o, _ := e.start(t, ix, ix, quick)
			e.put(t, 0, 10)
			e.waitEqual(t, ix, 10*time.Second)
			heard := o.heard.Load()
			waitFor(t, 5*time.Second, "progress while quiet", func() bool { return o.heard.Load() > heard+2 })

			link.break_(e, o)
			e.put(t, 10, 10)
			e.proxy.Restore()
			e.waitEqual(t, ix, 20*time.Second)
			onlyStart(t, o)
		})
	}
}

// A zone that nothing writes to after the load still hears etcd every ProgressEvery, on
// one stream: etcd answers a progress request only for watches that start at or below its
// current revision, and a watch from load revision + 1 would never hear one.
func TestQuietZoneHearsProgressWithoutAnyWriteAndKeepsItsStream(t *testing.T) {
	e := newEnv(t)
	e.put(t, 0, 3)
	ix := newIndex()
	o, _ := e.start(t, ix, ix, quick) // progress after 100 ms quiet, stalled 300 ms later
	heard := o.heard.Load()
	time.Sleep(2 * time.Second) // an observation window: 20 progress intervals, 5 stall bounds
	if got := o.heard.Load() - heard; got < 5 {
		t.Errorf("heard etcd %d times in 2s of a quiet zone, want a progress notification about every 100ms", got)
	}
	o.mu.Lock()
	failures := append([]string(nil), o.failures...)
	o.mu.Unlock()
	if len(failures) > 0 {
		t.Errorf("a quiet, healthy link was abandoned: %v", failures)
	}
	onlyStart(t, o)
}

// When compaction took exactly the revision the index holds, the watch resumes after it
// instead of reloading: the index misses nothing that etcd still has.
func TestCompactionOfTheHeldRevisionAloneResumesWithoutReloading(t *testing.T) {
	e := newEnv(t)
	ix := newIndex()
	o, _ := e.start(t, ix, ix, quick)
	e.put(t, 0, 1)
	e.waitEqual(t, ix, 10*time.Second)
	e.blackHole(o)
	// The index holds revision r; compacting at r+1 removes r but keeps every change after it.
	resp, err := e.direct.Put(context.Background(), prefix+"k/1", `{"host":"10.0.0.9"}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.direct.Compact(context.Background(), resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	e.proxy.Restore()
	e.waitEqual(t, ix, 20*time.Second)
	onlyStart(t, o)
}

func TestProgressNotificationsAdvanceTheResumeRevision(t *testing.T) {
	e := newEnv(t)
	ix := newIndex()
	o, _ := e.start(t, ix, ix, quick)
	e.put(t, 0, 1)
	e.waitEqual(t, ix, 10*time.Second)

	// Revisions move on outside the prefix; only progress notifications tell the watcher.
	var last int64
	for range 20 {
		resp, err := e.direct.Put(context.Background(), "/elsewhere/x", "y")
		if err != nil {
			t.Fatal(err)
		}
		last = resp.Header.Revision
	}
	heard := o.heard.Load()
	waitFor(t, 5*time.Second, "two progress notifications", func() bool { return o.heard.Load() >= heard+2 })

	// Compact past the last event but not past the last progress revision, while cut off by
	// a black hole, which the watcher resumes from itself (clientv3 resumes a cut stream on
	// its own, from its own revision).
	e.blackHole(o)
	if _, err := e.direct.Compact(context.Background(), last); err != nil {
		t.Fatal(err)
	}
	e.put(t, 1, 1)
	e.proxy.Restore()
	e.waitEqual(t, ix, 20*time.Second)
	onlyStart(t, o)
}

func TestFrozenEtcdIsNoticedReportedAndRecovered(t *testing.T) {
	e := newEnv(t)
	ix := newIndex()
	o, _ := e.start(t, ix, ix, nil) // the defaults: progress after 500 ms quiet, stalled 1 s later
	e.put(t, 0, 1)
	e.waitEqual(t, ix, 10*time.Second)
	waitFor(t, 5*time.Second, "etcd reported reachable", func() bool { return slices.Equal(o.reach(), []bool{true}) })

	froze := time.Now()
	e.proxy.BlackHole()
	waitFor(t, 5*time.Second, "the stalled stream noticed", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return !o.firstFail.IsZero()
	})
	o.mu.Lock()
	noticed := o.firstFail.Sub(froze)
	firstErr := o.failures[0]
	o.mu.Unlock()
	if noticed > 3500*time.Millisecond || !strings.Contains(firstErr, "stalled") {
		t.Fatalf("first failure %q after %s, want a stall within ~3s", firstErr, noticed)
	}
	waitFor(t, 30*time.Second, "etcd reported unreachable", func() bool { return slices.Equal(o.reach(), []bool{true, false}) })
	t.Logf("stall noticed after %s, unreachable reported after %s", noticed.Round(time.Millisecond), time.Since(froze).Round(time.Millisecond))

	e.proxy.Restore()
	waitFor(t, 30*time.Second, "recovery reported", func() bool { return slices.Equal(o.reach(), []bool{true, false, true}) })
	e.put(t, 1, 1)
	e.waitEqual(t, ix, 20*time.Second)
	onlyStart(t, o)
}

// dropper loses the first change of one key, as a bug between etcd and the index would.
type dropper struct {
	*index.Index
	key     string
	mu      sync.Mutex
	dropped bool
}

func (d *dropper) Apply(changes []record.Change) {
	d.mu.Lock()
	defer d.mu.Unlock()
	kept := changes[:0:0]
	for _, c := range changes {
		if c.Key == d.key && !d.dropped {
			d.dropped = true
			continue
		}
		kept = append(kept, c)
	}
	d.Index.Apply(kept)
}

func TestConsistencyCheckFindsAndRepairsADifference(t *testing.T) {
	e := newEnv(t)
	ix := newIndex()
	sink := &dropper{Index: ix, key: prefix + "k/3"}
	o, _ := e.start(t, sink, ix, func(w *Watcher) { w.CheckEvery = 200 * time.Millisecond })
	e.put(t, 0, 5)
	waitFor(t, 10*time.Second, "a reload for the difference", func() bool {
		return slices.Contains(o.resyncReasons(), "inconsistent")
	})
	e.waitEqual(t, ix, 10*time.Second)
	if got := o.resyncReasons(); !slices.Equal(got, []string{"start", "inconsistent"}) {
		t.Fatalf("full loads %v, want start and one for the difference", got)
	}
}

func TestRunReturnsWithinASecondOfCancelInEveryState(t *testing.T) {
	tests := []struct {
		name  string
		setup func(*env) // before Run
		then  func(*env) // once Run has had time to get into the state
	}{
		{name: "loading from a black-holed etcd", setup: func(e *env) { e.proxy.BlackHole() }},
		{name: "loading from a refusing etcd", setup: func(e *env) { e.proxy.Cut() }},
		{name: "watching"},
		{name: "watching a black-holed etcd", then: func(e *env) { e.proxy.BlackHole() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.setup != nil {
				tc.setup(e)
			}
			ix := newIndex()
			w := &Watcher{Client: e.viaCut, Prefix: prefix, Sink: ix, Observer: &observer{}, Log: clog.NewWithPlugin("mirror-test")}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				w.Run(ctx)
			}()
			if tc.setup == nil {
				waitFor(t, 10*time.Second, "first load", ix.Loaded)
			} else {
				time.Sleep(300 * time.Millisecond) // into the hanging Get: nothing to poll for
			}
			if tc.then != nil {
				tc.then(e)
				time.Sleep(300 * time.Millisecond) // a session waiting on a silent stream
			}
			cancel()
			select {
			case <-done:
			case <-time.After(time.Second):
				t.Fatal("Run still running 1s after cancel")
			}
		})
	}
}
