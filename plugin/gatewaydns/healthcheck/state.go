package healthcheck

// State is what the checks of a target say of it.
type State uint8

const (
	// Unknown: not checked yet, or failing fewer than DownAfter times since. It counts as
	// up: a server that starts, or a target just added, does not fail a name over before the
	// first checks have run, as Route 53 takes a new health check for healthy.
	Unknown State = iota
	// Up: the last check passed (a target that was down: the last UpAfter).
	Up
	// Down: the last DownAfter checks failed (a target that was down: not UpAfter passed since).
	Down
)

var stateNames = [...]string{Unknown: "unknown", Up: "up", Down: "down"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "invalid"
}

// run is a target's state and its run of equal results.
type run struct {
	state State
	// passed, failed: consecutive results of the kind, the other being 0.
	passed, failed int
}

// next is the run after one more result: a failure counts towards DownAfter from any state
// but Down; a pass brings an unknown target up at once (it was taken for up already) and a
// down one after UpAfter passes in a row.
func (r run) next(passed bool, downAfter, upAfter int) run {
	if passed {
		r.passed, r.failed = r.passed+1, 0
		if r.state == Unknown || r.state == Down && r.passed >= upAfter {
			r.state = Up
		}
		return r
	}
	r.passed, r.failed = 0, r.failed+1
	if r.failed >= downAfter {
		r.state = Down
	}
	return r
}
