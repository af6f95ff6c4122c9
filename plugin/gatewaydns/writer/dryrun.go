package writer

import (
	"slices"
	"sync"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
)

// DryRunObserver is an optional part of Observer: told, with Config.DryRun, the puts and
// deletes the writer would commit, each once: a name's change when it is first planned, and
// later only the operations its plan gains (a key external-dns rewrote, a target that
// changed). A resync that plans the same again tells nothing, so the operations told add up to
// what a takeover would write, not to that times the number of passes.
type DryRunObserver interface {
	Planned(c plan.Change)
}

// planned remembers, per name, the operations of its last dry-run plan (dryRunOps).
type planned struct {
	mu  sync.Mutex
	ops map[string]map[string]bool
}

// dryRunOps names each operation of c: a put by its key and value (the same key with another
// value is another write), a delete by its key.
func dryRunOps(c plan.Change) map[string]bool {
	ops := make(map[string]bool, len(c.Puts)+len(c.Deletes))
	for _, p := range c.Puts {
		ops["+"+p.Key+"\x00"+string(p.Value)] = true
	}
	for _, d := range c.Deletes {
		ops["-"+d] = true
	}
	return ops
}

// fresh records c as its name's plan and returns the part of it not in the name's previous
// plan; ok is false when there is none. (Adopted is not carried into a part: a dry run counts
// puts and deletes.)
func (p *planned) fresh(c plan.Change) (part plan.Change, ok bool) {
	ops := dryRunOps(c)
	p.mu.Lock()
	prev := p.ops[c.Name]
	if p.ops == nil {
		p.ops = make(map[string]map[string]bool)
	}
	p.ops[c.Name] = ops
	p.mu.Unlock()
	if prev == nil {
		return c, true
	}
	part = plan.Change{Name: c.Name, Claim: c.Claim, Withdraws: c.Withdraws}
	for _, put := range c.Puts {
		if !prev["+"+put.Key+"\x00"+string(put.Value)] {
			part.Puts = append(part.Puts, put)
		}
	}
	for _, d := range c.Deletes {
		if !prev["-"+d] {
			part.Deletes = append(part.Deletes, d)
			if slices.Contains(c.Registry, d) {
				part.Registry = append(part.Registry, d)
			}
		}
	}
	return part, len(part.Puts)+len(part.Deletes) > 0
}

// forget forgets name's plan: it needs no change any more, and a change it needs again later
// is told whole.
func (p *planned) forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.ops, name)
}

// plannedOnly tells the Observer the operations of a dry run that it was not told yet, and
// forgets the names of this reconcile that need none any more.
func (w *Writer) plannedOnly(names []string, changes []plan.Change) {
	do, _ := w.obs.(DryRunObserver)
	changed := make(map[string]bool, len(changes))
	for _, c := range changes {
		changed[c.Name] = true
		if part, ok := w.planned.fresh(c); ok && do != nil {
			do.Planned(part)
		}
	}
	for _, n := range names {
		if !changed[n] {
			w.planned.forget(n)
		}
	}
}
