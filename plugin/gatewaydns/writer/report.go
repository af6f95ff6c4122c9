package writer

import (
	"sync"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
)

// reports remembers the last outcome reported for each name and kind of problem, so that a
// problem that lasts reaches the Observer (an Event, a counter increment) once, not at every
// reconcile and resync: again only when its outcome changes (another winner, another error) or
// after the name was reconciled without any problem in between.
type reports struct {
	mu   sync.Mutex
	last map[reportKey]string
}

type reportKey struct {
	name string
	kind reportKind
}

type reportKind uint8

const (
	reportConflict reportKind = iota
	reportSkip
	reportFailure
)

// first records outcome as the name's latest of this kind and reports whether it is new.
func (r *reports) first(name string, kind reportKind, outcome string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = make(map[reportKey]string)
	}
	k := reportKey{name, kind}
	if prev, ok := r.last[k]; ok && prev == outcome {
		return false
	}
	r.last[k] = outcome
	return true
}

// settled forgets what was reported for name: it was reconciled without a problem.
func (r *reports) settled(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range []reportKind{reportConflict, reportSkip, reportFailure} {
		delete(r.last, reportKey{name, k})
	}
}

func (w *Writer) reportConflict(c plan.Conflict) {
	if w.reports.first(c.Name, reportConflict, c.Winner) {
		w.obs.Conflict(c)
	}
}

func (w *Writer) reportSkip(s plan.Skip) {
	if w.reports.first(s.Name, reportSkip, string(s.Reason)+" "+s.Detail) {
		w.obs.Skipped(s)
	}
}

// reportFailure tells the Observer about a name (or a zone) that could not be read or written.
func (w *Writer) reportFailure(name string, err error) {
	if w.reports.first(name, reportFailure, err.Error()) {
		w.obs.Failed(name, err)
	}
}

// settle forgets the reports of the names that res shows reconciled without a problem.
func (w *Writer) settle(names []string, res *Result) {
	troubled := make(map[string]bool, len(res.Failed)+len(res.Conflicts)+len(res.Skipped))
	for n := range res.Failed {
		troubled[n] = true
	}
	for _, c := range res.Conflicts {
		troubled[c.Name] = true
	}
	for _, s := range res.Skipped {
		troubled[s.Name] = true
	}
	for _, n := range names {
		if !troubled[n] {
			w.reports.settled(n)
		}
	}
}
