package index

// A load that found etcd to be a new store (restored from a snapshot, another cluster: see
// package store's Lineage) replaces what the index holds by what a store whose revisions are
// other changes holds. A serial is a revision: a secondary at a serial of the store before
// holds that store's zone, and neither the journal (whose changes are the store before's) nor
// etcd's history (the new store's) can say what changed since. So the index forgets its
// journal, and no IXFR is made from any zone's serial up to the one it had then: a secondary
// asking from one gets the whole zone (RFC 1995 allows it), once the serial moves on.
//
// The serial does not move back (a secondary would take its copy for the newer), so after a
// restore that takes etcd's revisions back, the zone's serial stays where it was until etcd's
// revision passes it, and secondaries keep the store before's zone until then: restore with
// etcdutl's --bump-revision (docs/operations.md).

// NewStore marks the load as the read of a new store: Finish forgets the journal of the store
// before, and bars IXFRs from its serials.
func (l *Loading) NewStore() { l.newStore = true }

// newStoreLocked forgets the journal and bars an IXFR from each zone's serial now or before.
func (ix *Index) newStoreLocked() {
	ix.journal.changes = nil
	if ix.storeBarriers == nil {
		ix.storeBarriers = map[string]uint32{}
	}
	for _, p := range ix.opts.ZonePrefixes {
		ix.storeBarriers[p] = ix.serialOfLocked(p)
		ix.journal.rebase(p, ix.serials[p])
	}
}
