package mirror

import "time"

// progress decides, for a quiet watch, when to ask etcd for a progress notification and when
// the stream counts as stalled. A frozen member (SIGSTOP, a hung host) keeps its TCP
// connection open, and gRPC keep-alive cannot probe faster than etcd's 5 s minimum, so the
// watch asks itself: no answer at all (event or progress) within stall of a request means
// the stream is abandoned and the watch resumed on a new one.
type progress struct {
	every, stall time.Duration
	lastHeard    time.Time
	asked        time.Time // zero: no request outstanding
}

type progressAction int

const (
	wait progressAction = iota
	ask
	stalled
)

func newProgress(every, stall time.Duration, now time.Time) *progress {
	return &progress{every: every, stall: stall, lastHeard: now}
}

func (p *progress) heard(now time.Time) {
	p.lastHeard = now
	p.asked = time.Time{}
}

func (p *progress) due(now time.Time) progressAction {
	switch {
	case !p.asked.IsZero() && now.Sub(p.asked) >= p.stall:
		return stalled
	case p.asked.IsZero() && now.Sub(p.lastHeard) >= p.every:
		p.asked = now
		return ask
	}
	return wait
}

func (w *Watcher) progressEvery() time.Duration {
	if w.ProgressEvery > 0 {
		return w.ProgressEvery
	}
	return defaultProgressEvery
}

func (w *Watcher) stallAfter() time.Duration {
	if w.StallAfter > 0 {
		return w.StallAfter
	}
	return defaultStallAfter
}
