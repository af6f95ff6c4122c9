package writer

import (
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
)

// DryRunObserver is an optional part of Observer: told, with Config.DryRun, each change the
// writer would commit, once per name and change (a resync that plans the same again tells
// nothing).
type DryRunObserver interface {
	Planned(c plan.Change)
}

// plannedOnly tells the Observer the changes of a dry run that it was not told yet (the same
// once-per-outcome memory as the problems: reports), and forgets the names of this reconcile
// that need none any more.
func (w *Writer) plannedOnly(names []string, changes []plan.Change) {
	do, _ := w.obs.(DryRunObserver)
	planned := make(map[string]bool, len(changes))
	for _, c := range changes {
		planned[c.Name] = true
		if w.reports.first(c.Name, reportPlanned, c.String()) && do != nil {
			do.Planned(c)
		}
	}
	for _, n := range names {
		if !planned[n] {
			w.reports.forget(n, reportPlanned)
		}
	}
}
