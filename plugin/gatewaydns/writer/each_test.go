package writer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestEachRunsAllAtMostInFlightAtATime(t *testing.T) {
	var running, most atomic.Int32
	ran := make([]bool, 40)
	started, err := each(context.Background(), len(ran), func(_ context.Context, i int) error {
		now := running.Add(1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		ran[i] = true
		running.Add(-1)
		return nil
	})
	if err != nil || started != len(ran) {
		t.Fatalf("each: started %d, err %v; want %d, nil", started, err, len(ran))
	}
	for i, r := range ran {
		if !r {
			t.Errorf("job %d did not run", i)
		}
	}
	if m := most.Load(); m > inFlight || m < 2 {
		t.Errorf("%d jobs ran at once, want 2..%d", m, inFlight)
	}
}

func TestEachStopsStartingAfterAnError(t *testing.T) {
	boom := errors.New("boom")
	var mu sync.Mutex
	ran := map[int]bool{}
	started, err := each(context.Background(), 100, func(_ context.Context, i int) error {
		mu.Lock()
		ran[i] = true
		mu.Unlock()
		if i == 5 {
			return boom
		}
		if i == 7 {
			return errors.New("later")
		}
		time.Sleep(time.Millisecond)
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want the error of the lowest job that failed", err)
	}
	if started < 6 || started > 6+inFlight {
		t.Fatalf("started %d after job 5 failed, want 6..%d", started, 6+inFlight)
	}
	for i := range 100 {
		if ran[i] != (i < started) {
			t.Errorf("job %d ran %v, started %d", i, ran[i], started)
		}
	}
}

func TestEachStopsWhenItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started, err := each(ctx, 100, func(ctx context.Context, i int) error {
		if i == 10 {
			cancel()
		}
		if i > 10 {
			// Held until the cancel: else, with job 10's goroutine not scheduled yet (the
			// race detector, a busy machine), the others could all start and finish first.
			<-ctx.Done()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || started >= 100 {
		t.Fatalf("started %d, err %v; want fewer than 100 and context.Canceled", started, err)
	}
}
