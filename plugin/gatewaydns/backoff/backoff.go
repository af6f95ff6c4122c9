// Package backoff is the one retry delay of gatewaydns: both etcd roles (mirror, store,
// writer), the NOTIFYs to secondaries and the Kubernetes side's discovery wait with it after a
// failure, so that a store, secondary or API server that is down is asked less and less often,
// and a recovered one is used again at once. (client-go's informers back off by themselves.)
package backoff

import (
	"context"
	"time"
)

// Backoff doubles a delay from Min up to Max. The zero value is not usable: use New.
type Backoff struct {
	min, max, d time.Duration
}

// New returns a back-off that starts at min and doubles up to max.
func New(min, max time.Duration) *Backoff {
	return &Backoff{min: min, max: max, d: min}
}

// Next returns the delay to wait now, and doubles the one after it.
func (b *Backoff) Next() time.Duration {
	d := b.d
	b.d = min(2*b.d, b.max)
	return d
}

// Reset starts again from the shortest delay: what the failure was waiting for works again.
func (b *Backoff) Reset() { b.d = b.min }

// Sleep waits the next delay, or until ctx is done; it reports whether the full delay passed.
func (b *Backoff) Sleep(ctx context.Context) bool { return b.Wait(ctx, nil) }

// Wait is Sleep cut short when early is closed: the failure's cause is known to be gone (the
// connection came back), so the next attempt need not wait out the delay. The delay still
// doubles: a cause that comes back and fails again at once is asked less often each time.
func (b *Backoff) Wait(ctx context.Context, early <-chan struct{}) bool {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-early:
		return false
	case <-t.C:
		return true
	}
}
