package index

import (
	"github.com/coredns/coredns/request"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/steer"
)

// What a zone transfer holds of a name with a steering policy: secondaries can neither check
// nor draw nor place a client, so they get the eligible owners of the best tier, every address
// of theirs not held down, in the zone copy's health view (steer.Name.Transfer); every owner,
// every address, when none is eligible (fail open). A name without a policy is its records'
// union, as before steering. Locality is a question's: a transfer places no one.

// steerTransfer leaves out of the Zone's records from first on, the records of one name, those
// a secondary does not hold.
func (z *Zone) steerTransfer(first int) {
	recs := z.recs[first:]
	steered := false
	for _, r := range recs {
		steered = steered || r.e.flags&steeredFlag != 0
	}
	if !steered {
		return
	}
	var g steer.Group
	owner, down := make([]int, len(recs)), make([]bool, len(recs))
	for i, r := range recs {
		if !r.e.hasHost() {
			owner[i] = -1 // text alone: not steered
			continue
		}
		st := r.e.steering()
		down[i] = z.view.isDown(st.HealthCheck, r.e.hostName())
		owner[i] = g.Add(r.e.ownerName(), st, down[i])
	}
	res := steer.Prepare(g.Owners(nil)).Transfer(nil)
	kept := z.recs[:first]
	for i, r := range recs {
		if owner[i] < 0 || containsInt(res.Owners, owner[i]) && (res.AllAddresses() || !down[i]) {
			kept = append(kept, r)
		}
	}
	z.recs = kept
}

// Serial is the zone's SOA serial: its revision, with the offset of a zone with health-checked
// names (steerserial.go).
func (z *Zone) Serial(request.Request) uint32 { return z.serial }
