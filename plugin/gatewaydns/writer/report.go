package writer

import (
	"sync"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// reports remembers the last outcome reported for each name and kind of problem, so that a
// problem that lasts reaches the Observer (an Event, a counter increment) once, not at every
// reconcile and resync: again only when its outcome changes (another winner, another error),
// after the name was reconciled without any problem in between, or, for a conflict, on the
// objects that joined the name since.
type reports struct {
	mu   sync.Mutex
	last map[reportKey]string
	told map[string]map[record.ObjectRef]bool // name -> the objects told of its conflict

	counted     [2]int // lost and failing names as last told to a ProblemObserver
	countedOnce bool
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

// untold records a conflict on name with outcome, asked for by objects, and returns the
// objects not yet told of it (all of them when the outcome is new); ok is false when there is
// nothing to report.
func (r *reports) untold(name, outcome string, objects []record.ObjectRef) (fresh []record.ObjectRef, ok bool) {
	isNew := r.first(name, reportConflict, outcome)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.told == nil {
		r.told = make(map[string]map[record.ObjectRef]bool)
	}
	if isNew || r.told[name] == nil {
		r.told[name] = make(map[record.ObjectRef]bool, len(objects))
	}
	told := r.told[name]
	for _, o := range objects {
		if !told[o] {
			told[o] = true
			fresh = append(fresh, o)
		}
	}
	return fresh, isNew || len(fresh) > 0
}

// forget forgets what was reported for name of one kind.
func (r *reports) forget(name string, kind reportKind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.last, reportKey{name, kind})
}

// settled forgets the problems reported for name: it was reconciled without one.
func (r *reports) settled(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range []reportKind{reportConflict, reportSkip, reportFailure} {
		delete(r.last, reportKey{name, k})
	}
	delete(r.told, name)
}

func (w *Writer) reportConflict(c plan.Conflict) {
	fresh, ok := w.reports.untold(c.Name, c.Winner, c.Sources)
	if !ok {
		return
	}
	if c.Sources != nil {
		c.Sources = fresh
	}
	w.obs.Conflict(c)
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

// counts is how many names are lost and failing now.
func (r *reports) counts() (lost, failing int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.last {
		switch k.kind {
		case reportConflict:
			lost++
		case reportFailure:
			failing++
		}
	}
	return lost, failing
}

// tellProblems tells a ProblemObserver the counts when they changed since it was last told.
func (w *Writer) tellProblems() {
	lost, failing := w.reports.counts()
	w.tellCounts(lost, failing)
}

func (w *Writer) tellNoProblems() { w.tellCounts(0, 0) }

func (w *Writer) tellCounts(lost, failing int) {
	po, ok := w.obs.(ProblemObserver)
	if !ok {
		return
	}
	w.reports.mu.Lock()
	changed := w.reports.counted != [2]int{lost, failing} || !w.reports.countedOnce
	w.reports.counted, w.reports.countedOnce = [2]int{lost, failing}, true
	w.reports.mu.Unlock()
	if changed {
		po.Problems(lost, failing)
	}
}
