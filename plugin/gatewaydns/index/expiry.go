package index

import "time"

// ExpiredLease is the lease of key when it has run out, as the index last heard of it: past
// its known expiry, or no longer known (etcd said it was gone); 0 when the key has no lease,
// a live one, or is not held. A delete of such a key is the lease's expiry, not its owner's
// doing: the serve path may keep answering it for a grace while the owner republishes.
// Within a second of the known expiry counts as run out: the expiry was read up to a
// round trip late.
func (ix *Index) ExpiredLease(key string, now time.Time) int64 {
	elems := ix.elements(key)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	id, depth := ix.tree.walk(ix.tree.root, elems)
	if depth != len(elems) {
		return 0
	}
	v := ix.tree.at(id).value
	if v == nil || v.lease == 0 {
		return 0
	}
	if at, known := ix.leases[v.lease]; known && at.After(now.Add(time.Second)) {
		return 0
	}
	return v.lease
}
