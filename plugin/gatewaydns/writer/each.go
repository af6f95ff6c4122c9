package writer

import (
	"context"
	"sync"
	"sync/atomic"
)

// inFlight is how many transactions of one reconcile run at once, reads or commits. Each is a
// round trip to etcd, and a reconcile of 100k names is some 1600 of them: one at a time, the
// latency of a remote or busy etcd adds up to seconds, and etcd batches concurrent
// transactions into fewer writes of its log.
const inFlight = 4

// each runs f(ctx, i) for i from 0 to n-1, at most inFlight at a time, starting them in order
// of i. After an error it starts no more and waits for those running. It returns how many it
// started (f ran for every i below that, for none above) and the error of the lowest i that
// failed, or ctx's when it ended before all started.
func each(ctx context.Context, n int, f func(ctx context.Context, i int) error) (started int, err error) {
	errs := make([]error, n)
	var failed atomic.Bool
	var wg sync.WaitGroup
	slots := make(chan struct{}, inFlight)
	i := 0
	for ; i < n; i++ {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil || failed.Load() {
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-slots }()
			if errs[i] = f(ctx, i); errs[i] != nil {
				failed.Store(true)
			}
		}(i)
	}
	wg.Wait()
	for _, err := range errs[:i] {
		if err != nil {
			return i, err
		}
	}
	if i < n {
		return i, ctx.Err()
	}
	return i, nil
}
