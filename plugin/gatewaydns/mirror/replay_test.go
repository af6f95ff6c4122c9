package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// history writes txns transactions of n keys each under dir, outside the watched prefix, and
// returns the last one's revision: revisions that etcd must read through to catch up a watch
// that starts before them.
func (e *env) history(t *testing.T, dir string, txns, n int) int64 {
	t.Helper()
	value := strings.Repeat("x", 200)
	var rev int64
	for i := range txns {
		ops := make([]clientv3.Op, n)
		for j := range ops {
			ops[j] = clientv3.OpPut(fmt.Sprintf("%s%d/%d", dir, i, j), value)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := e.direct.Txn(ctx).Then(ops...).Commit()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		rev = resp.Header.Revision
	}
	return rev
}

// After a load, the deletes between its newest key and its revision are replayed for the
// serial, up to MaxReplay revisions of history; beyond, the serial is the load's revision, as
// after a compaction.
func TestTheHistoryAfterALoadsNewestKeyIsReplayedUpToMaxReplay(t *testing.T) {
	tests := []struct {
		name       string
		maxReplay  int64
		wantDelete bool // the serial is the delete's revision; else the load's
	}{
		{"a history within the limit gives the delete's revision", 1000, true},
		{"a longer history gives the load's revision", 100, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.write(t, prefix+"a/1", `{"host":"10.0.0.1"}`)
			e.write(t, prefix+"b/1", `{"host":"10.0.0.2"}`)
			deleted := e.write(t, prefix+"b/1", "")
			loaded := e.history(t, "/other/", 500, 1)
			ix := newIndex()
			e.start(t, ix, ix, func(w *Watcher) { quick(w); w.MaxReplay = tt.maxReplay })
			want := loaded
			if tt.wantDelete {
				want = deleted
			}
			waitFor(t, 5*time.Second, fmt.Sprintf("serial %d", want), func() bool { return ix.Revision("test.") == want })
			put := e.write(t, prefix+"c/1", `{"host":"10.0.0.4"}`)
			waitFor(t, 5*time.Second, "the change after the load", func() bool { return ix.Revision("test.") == put && ix.Len() == 2 })
		})
	}
}

// A history etcd takes longer to read than a watch may stay silent is not replayed. etcd
// reads a watch's whole history at once, holding up its writes and other watchers meanwhile,
// and says nothing to the watch until done: the session was taken for stalled and began the
// same read again, so it never caught up, and no change after the load was applied. Here the
// stall timeout is cut to 20 ms to stand for a history of seconds.
func TestAHistoryTooLongToReplayDoesNotHoldBackTheChangesAfterALoad(t *testing.T) {
	e := newEnv(t)
	e.write(t, prefix+"a/1", `{"host":"10.0.0.1"}`)
	e.write(t, prefix+"b/1", `{"host":"10.0.0.2"}`)
	e.write(t, prefix+"b/1", "")
	loaded := e.history(t, "/other/", 800, 128) // about 100k keys: etcd allows 128 operations a transaction
	ix := newIndex()
	o, _ := e.start(t, ix, ix, func(w *Watcher) {
		w.ProgressEvery, w.StallAfter, w.MaxReplay = 10*time.Millisecond, 20*time.Millisecond, 100
	})
	waitFor(t, 5*time.Second, "the load's revision as serial", func() bool { return ix.Revision("test.") == loaded })
	put := e.write(t, prefix+"c/1", `{"host":"10.0.0.4"}`)
	waitFor(t, 5*time.Second, "the change after the load", func() bool { return ix.Revision("test.") == put && ix.Len() == 2 })
	if reasons := o.resyncReasons(); len(reasons) != 1 {
		t.Errorf("loads %v, want the first only", reasons)
	}
}
