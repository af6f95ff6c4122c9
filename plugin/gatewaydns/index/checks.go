package index

import (
	"maps"
	"slices"
	"strings"
)

// The health-checked records of the index: every record whose owner declares a health check
// (record.Steering.HealthCheck) is a target (its host and the check) that the serve role's
// checker runs (CheckTargets), and belongs to a name whose answers follow the checks' results
// (health.go). Kept as the records are written, under the index's write lock.

// CheckTarget is one health-checked address: a record's host and its owner's health check,
// in canonical form ("tcp://:443").
type CheckTarget struct {
	Host, Check string
}

// checkedRec is a checked record: its target, and the key of its name (recordName).
type checkedRec struct {
	target CheckTarget
	name   string
}

// checks are the index's checked records.
type checks struct {
	byKey   map[string]checkedRec               // record key -> its target and name
	targets map[CheckTarget]map[string]struct{} // target -> the keys of its records
	names   map[string]int                      // name key -> how many of its records are checked
	// changed is closed when a target comes or goes, and replaced.
	changed chan struct{}
}

func newChecks() checks {
	return checks{byKey: map[string]checkedRec{}, targets: map[CheckTarget]map[string]struct{}{},
		names: map[string]int{}, changed: make(chan struct{})}
}

// checkedOf is the checked record of e at key; ok is false when e declares no check.
func checkedOf(key string, e *entry) (checkedRec, bool) {
	if e == nil || e.flags&steeredFlag == 0 {
		return checkedRec{}, false
	}
	check := e.steering().HealthCheck
	if check == "" || !e.hasHost() {
		return checkedRec{}, false
	}
	return checkedRec{target: CheckTarget{Host: e.hostName(), Check: check}, name: recordName(key)}, true
}

// set makes the record at key e (nil: gone), and returns the names it checks, or checked.
func (c *checks) set(key string, e *entry) (names []string) {
	if old, ok := c.byKey[key]; ok {
		names = append(names, old.name)
		c.drop(key, old)
	}
	if cr, ok := checkedOf(key, e); ok {
		c.add(key, cr)
		if !slices.Contains(names, cr.name) {
			names = append(names, cr.name)
		}
	}
	return names
}

func (c *checks) add(key string, cr checkedRec) {
	c.byKey[key] = cr
	keys := c.targets[cr.target]
	if keys == nil {
		keys = map[string]struct{}{}
		c.targets[cr.target] = keys
		c.signal()
	}
	keys[key] = struct{}{}
	c.names[cr.name]++
}

func (c *checks) drop(key string, cr checkedRec) {
	delete(c.byKey, key)
	keys := c.targets[cr.target]
	delete(keys, key)
	if len(keys) == 0 {
		delete(c.targets, cr.target)
		c.signal()
	}
	if c.names[cr.name]--; c.names[cr.name] <= 0 {
		delete(c.names, cr.name)
	}
}

// dropUnder forgets the checked records under the key prefix (a load replaces them), and
// returns their names.
func (c *checks) dropUnder(prefix string) (names []string) {
	for key, cr := range c.byKey {
		if strings.HasPrefix(key, prefix) {
			c.drop(key, cr)
			names = append(names, cr.name)
		}
	}
	return names
}

func (c *checks) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// namesOf are the keys of the names that the records of targets belong to, each once.
func (c *checks) namesOf(targets []CheckTarget) []string {
	seen := map[string]bool{}
	var names []string
	for _, t := range targets {
		for key := range c.targets[t] {
			if n := c.byKey[key].name; !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	return names
}

// CheckTargets are the targets the index's records declare, sorted, and a channel closed when
// that changes: the serve role hands them to its checker, and waits on the channel for more.
func (ix *Index) CheckTargets() ([]CheckTarget, <-chan struct{}) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	targets := slices.Collect(maps.Keys(ix.checks.targets))
	slices.SortFunc(targets, func(a, b CheckTarget) int {
		if c := strings.Compare(a.Host, b.Host); c != 0 {
			return c
		}
		return strings.Compare(a.Check, b.Check)
	})
	return targets, ix.checks.changed
}
