package index

import (
	"maps"
	"slices"

	"github.com/coredns/coredns/plugin/etcd/msg"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/steer"
)

// The health of the checked addresses, as the serve role's checker hands it in (ApplyHealth):
// a view of the addresses held down, replaced as a whole on every change, so that a question
// or a zone copy reads one view throughout. A question's steering is prepared again for a new
// view (steerset.go); a zone copy holds the view of its serial (serial.go), so that a
// secondary's zone follows a failover by IXFR.

// healthView is the health of every checked address at one moment: which are held down.
// Never changed once made.
type healthView struct {
	down map[CheckTarget]struct{}
}

// isDown reports whether the check of host is held down in v.
func (v *healthView) isDown(check, host string) bool {
	if v == nil || check == "" || len(v.down) == 0 {
		return false
	}
	_, down := v.down[CheckTarget{Host: host, Check: check}]
	return down
}

// HealthChange is a target going down, or coming back up (Down false; an unknown target
// counts as up).
type HealthChange struct {
	Target CheckTarget
	Down   bool
}

// ApplyHealth applies changes of the targets' health, in order: the answers of their names
// follow at once, and the zones holding them move their serials (steerSerials) so that
// secondaries transfer the new selection.
func (ix *Index) ApplyHealth(changes []HealthChange) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	old := ix.health.Load()
	down := maps.Clone(old.down)
	if down == nil {
		down = map[CheckTarget]struct{}{}
	}
	var moved []CheckTarget
	for _, c := range changes {
		_, was := down[c.Target]
		switch {
		case c.Down && !was:
			down[c.Target] = struct{}{}
		case !c.Down && was:
			delete(down, c.Target)
		default:
			continue
		}
		if !slices.Contains(moved, c.Target) {
			moved = append(moved, c.Target)
		}
	}
	if len(moved) == 0 {
		return
	}
	v := &healthView{down: down}
	ix.health.Store(v)
	names := ix.checks.namesOf(moved)
	ix.moveSteerSerialsLocked(names, v, true)
	ix.checkFailOpenLocked(names)
}

// view is the health now.
func (ix *Index) view() *healthView { return ix.health.Load() }

// failOpenOf reports whether the name at the key nameKey has no eligible owner in view: every
// owner's checked addresses are held down, so that it answers all of them (fail open).
func (ix *Index) failOpenOf(nameKey string, v *healthView) bool {
	id := ix.tree.node(ix.elements(nameKey))
	if id == 0 {
		return false
	}
	var g steer.Group
	for _, e := range ix.tree.nameRecords(id) {
		if !e.hasHost() {
			continue
		}
		st := e.steering()
		g.Add(e.ownerName(), st, v.isDown(st.HealthCheck, e.hostName()))
	}
	owners := g.Owners(nil)
	if len(owners) == 0 {
		return false
	}
	return steer.Prepare(owners).Transfer(nil).Rule == steer.RuleFailOpen
}

// checkFailOpenLocked looks again at whether the names (keys) fail open, and tells
// Options.FailOpen of each that starts or stops.
func (ix *Index) checkFailOpenLocked(names []string) {
	v := ix.view()
	for _, n := range names {
		failing := ix.checks.names[n] > 0 && ix.failOpenOf(n, v)
		if failing == ix.failing[n] {
			continue
		}
		if failing {
			ix.failing[n] = true
		} else {
			delete(ix.failing, n)
		}
		if ix.opts.FailOpen != nil {
			ix.opts.FailOpen(msg.Domain(n), failing, len(ix.failing))
		}
	}
}

// FailingOpen is how many names have no eligible owner now.
func (ix *Index) FailingOpen() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.failing)
}
