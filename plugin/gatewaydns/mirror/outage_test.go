package mirror

import (
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// TestAnOutageLeavesNothingBehindAndEndsWithinASecond: a watcher that rides out an etcd
// outage, refused or black-holed, of any length, holds as many watch streams afterwards as
// before (one, by etcd's count and by the client's), as many goroutines give or take a few,
// answers a new record within a second of etcd answering, and applies each later event once.
// Before, every retry of the outage left a stream waiting for the connection, which etcd
// then served for the life of the process (16 after 60 s), and the first change after an
// outage came after the back-off's sleep and gRPC's reconnect delay (up to 54 s).
func TestAnOutageLeavesNothingBehindAndEndsWithinASecond(t *testing.T) {
	for _, run := range testenv.OutageRuns() {
		t.Run(run.String(), func(t *testing.T) {
			e := newEnv(t)
			outage := testenv.Outages(e.etcd, e.proxy)[run.Kind]
			ix := newIndex()
			o, _ := e.start(t, ix, ix, nil)
			e.put(t, 0, 10)
			e.waitEqual(t, ix, 10*time.Second)
			before := testenv.TakeLeftovers(t, e.etcd)
			if got := e.streams.get(); got != 1 || before.Streams != 1 {
				t.Fatalf("before the outage: the client counts %d watch streams, etcd %d; want 1", got, before.Streams)
			}
			putsBefore := o.puts.Load()

			outage.Begin()
			time.Sleep(run.Length) // the outage itself: its length is what is under test
			outage.End()
			// The test's own client has sat out the outage in gRPC's default reconnect
			// back-off: a new one writes at once, so that the time measured is the
			// watcher's.
			e.direct = e.etcd.Client(t)
			back := time.Now()

			e.put(t, 10, 1)
			waitFor(t, 5*time.Second, "the first record after the outage", func() bool {
				_, ok := ix.Digest(prefix)
				return ok && ix.Len() == 11
			})
			if took := time.Since(back); took > time.Second {
				t.Errorf("the first record after the outage was answered %s after etcd answered again, want within 1s", took.Round(time.Millisecond))
			} else {
				t.Logf("the first record after the outage was answered %s after etcd answered again", took.Round(time.Millisecond))
			}
			e.put(t, 11, 50)
			e.waitEqual(t, ix, 10*time.Second)
			if got := o.puts.Load() - putsBefore; got != 51 {
				t.Errorf("the 51 puts after the outage were applied %d times, want each once", got)
			}
			onlyStart(t, o)

			after := testenv.WaitNoLeftovers(t, e.etcd, before, 10, 15*time.Second)
			if got := e.streams.get(); got != 1 {
				t.Errorf("after the outage the client counts %d watch streams, want 1", got)
			}
			t.Logf("etcd watch streams %d -> %d, goroutines %d -> %d", before.Streams, after.Streams, before.Goroutines, after.Goroutines)
		})
	}
}

// TestTheWatchResumesWithinASecondAfterARefusedOutageOfAnyLength: refused outages of 5, 30
// and 120 s (the lengths between and beyond the ones above, run side by side, each on an etcd
// of its own): a new record is answered within a second of etcd answering, and one watch
// stream is left, by etcd's count and the client's. The delay used to grow with the outage
// (7.7 s after 10 s, 12.8-17.7 s after 30 s, 54 s after 120 s): gRPC's dial back-off.
func TestTheWatchResumesWithinASecondAfterARefusedOutageOfAnyLength(t *testing.T) {
	for _, length := range []time.Duration{5 * time.Second, 30 * time.Second, 120 * time.Second} {
		t.Run(length.String(), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ix := newIndex()
			e.start(t, ix, ix, nil)
			e.put(t, 0, 1)
			e.waitEqual(t, ix, 10*time.Second)

			e.etcd.Kill()
			time.Sleep(length) // the outage itself: its length is what is under test
			e.etcd.Restart()
			e.direct = e.etcd.Client(t) // a client that has not sat out the outage in gRPC's back-off
			back := time.Now()
			e.put(t, 1, 1)
			waitFor(t, 5*time.Second, "the first record after the outage", func() bool { return ix.Len() == 2 })
			if took := time.Since(back); took > time.Second {
				t.Errorf("the first record after a %s outage was answered %s after etcd answered again, want within 1s", length, took.Round(time.Millisecond))
			} else {
				t.Logf("the first record after a %s outage was answered %s after etcd answered again", length, took.Round(time.Millisecond))
			}
			waitFor(t, 10*time.Second, "one watch stream", func() bool {
				n, err := e.etcd.WatchStreams(5 * time.Second)
				return err == nil && n == 1 && e.streams.get() == 1
			})
		})
	}
}
