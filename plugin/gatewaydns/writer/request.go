package writer

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// request runs one etcd request: attempts of at most AttemptTimeout each (the first of half
// that), retried while Timeout lasts. A member that does not answer (frozen, black-holed)
// costs one attempt: Members leaves it before the next. The outcome tells the Observer
// whether etcd is reachable.
//
// A retried write may have been applied by an attempt that timed out; writes are safe to
// retry because every commit compares the revisions it planned from.
func (w *Writer) request(ctx context.Context, f func(ctx context.Context) error) error {
	return w.attempts(ctx, w.cfg.AttemptTimeout/2, w.cfg.AttemptTimeout, f)
}

// requestEach is request with attempts of at most attempt each: a read whose answer grows
// with the zone (the resync's scan) needs longer attempts than a batch of a few names.
func (w *Writer) requestEach(ctx context.Context, attempt time.Duration, f func(ctx context.Context) error) error {
	return w.attempts(ctx, attempt, attempt, f)
}

// attempts runs f until it succeeds, fails for good or Timeout passes: the first attempt
// bounded by first, the others by then.
func (w *Writer) attempts(ctx context.Context, first, then time.Duration, f func(ctx context.Context) error) error {
	deadline := time.Now().Add(w.cfg.Timeout)
	for attempt := first; ; attempt = then {
		actx, cancel := context.WithTimeout(ctx, min(attempt, time.Until(deadline)))
		err := f(actx)
		cancel()
		if ctx.Err() != nil {
			return errors.Join(ctx.Err(), err)
		}
		w.reached(err)
		if err == nil || !retriable(err) || time.Until(deadline) <= 0 {
			return err
		}
		// The next attempt goes to a member that answers, after a short pause: a refusing
		// etcd answers at once, and must not be hammered.
		paused := time.Now()
		w.cfg.Members.Suspect(ctx)
		t := time.NewTimer(max(0, min(100*time.Millisecond-time.Since(paused), time.Until(deadline))))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(ctx.Err(), err)
		case <-t.C:
		}
	}
}

// retriable tells the errors of a member or the network (another attempt may reach another
// member) from the answers of etcd (a denied key, a too large request).
func retriable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	switch status.Code(errors.Unwrap(err)) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

// reached tells the Observer, if it listens, that etcd answered (err nil or an answer of
// etcd's) or not, when that changed.
func (w *Writer) reached(err error) {
	ro, ok := w.obs.(ReachabilityObserver)
	if !ok {
		return
	}
	answered := err == nil || perKey(err) || errors.Is(err, ErrNotLeader) || errors.Is(err, errStale)
	state := reachNo
	if answered {
		state = reachYes
	}
	w.reach.Set(state, func(reachability) { ro.EtcdReachable(answered) })
}

// reachability is the last state told to the Observer; the zero one, before the first
// request, is neither.
type reachability int

const (
	reachUnknown reachability = iota
	reachYes
	reachNo
)
