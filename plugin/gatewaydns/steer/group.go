package steer

import "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"

// Group gathers the records of one name into Owners, for the index: it adds each record (in
// key order) with its owner id, its steering and whether a health check holds its address
// down, and reads the Owners once all are added. An owner's records carry one policy when a
// gatewaydns writer wrote them; where they do not (written by hand), the first record's holds,
// so that the answer does not depend on which record a reader saw last. Records without an
// owner (external-dns without strict ownership, a person) are the owner "".
type Group struct {
	owners []Owner
}

// Add adds one record of owner and returns the index of the owner in Owners.
func (g *Group) Add(owner string, s record.Steering, down bool) int {
	i := 0
	for ; i < len(g.owners) && g.owners[i].ID != owner; i++ {
	}
	if i == len(g.owners) {
		g.owners = append(g.owners, Owner{ID: owner, Steering: s})
	}
	o := &g.owners[i]
	o.Addrs++
	if down {
		o.Down++
	}
	return i
}

// Owners are the owners added, in the order of their first record, each with its region in
// loc (nil: none).
func (g *Group) Owners(loc *Locality) []Owner {
	for i := range g.owners {
		g.owners[i].Region = loc.RegionOf(g.owners[i].ID)
	}
	return g.owners
}

// Steered reports whether questions for owners go through a Name at all: when some owner
// declares a policy, or when a Locality places clients and more than one owner publishes the
// name. Otherwise the name answers the union of its records, as before steering.
func Steered(owners []Owner, loc *Locality) bool {
	return HasPolicy(owners) || loc.Configured() && len(owners) > 1
}
