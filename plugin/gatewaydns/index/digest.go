package index

import (
	"encoding/binary"
	"hash/maphash"
	"strings"
)

// Digest sums up the keys under one prefix without copying them: their number, and the
// wrapping sum of a hash of each key with its mod revision. It does not depend on order, so a
// keys-only read of etcd at the revision the index has applied gives the same Digest when
// the index is right, and a missed put, delete or update shows as a difference. Values the
// index skips as invalid count too: etcd holds them.
type Digest struct {
	Keys int
	Sum  uint64
}

var digestSeed = maphash.MakeSeed()

// KeyDigest is one key's share of a Digest; add them with Digest.Add.
func KeyDigest(key string, modRevision int64) uint64 {
	var h maphash.Hash
	h.SetSeed(digestSeed)
	_, _ = h.WriteString(key)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(modRevision)) // #nosec G115 -- bits, not a number
	_, _ = h.Write(b[:])
	return h.Sum64()
}

// Add counts a key at its mod revision.
func (d *Digest) Add(key string, modRevision int64) {
	d.Keys++
	d.Sum += KeyDigest(key, modRevision)
}

func (d *Digest) remove(key string, modRevision int64) {
	d.Keys--
	d.Sum -= KeyDigest(key, modRevision)
}

// Digest is the digest of what the index holds under prefix, as last loaded by Load(prefix)
// and changed by Apply since; ok is false before the first Load of prefix. A watcher reads it
// between its own Applies, so it goes with the revision that watcher has applied.
func (ix *Index) Digest(prefix string) (d Digest, ok bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	p, ok := ix.digests[prefix]
	if !ok {
		return Digest{}, false
	}
	return *p, true
}

// loadDigestsLocked sets the digest of prefix, and of every loaded prefix below it (their keys
// were just replaced too), to those worked out by a Load (loaded, which holds every prefix
// loaded when it started); a loaded prefix above it (a
// zone and its subzone) trades the region's old share for the new one. Call it before the
// tree changes.
func (ix *Index) loadDigestsLocked(prefix string, base []string, loaded map[string]*Digest) {
	var held *Digest
	for p, d := range ix.digests {
		switch {
		case p == prefix:
		case strings.HasPrefix(p, prefix):
			if loaded[p] == nil {
				delete(ix.digests, p) // loaded while this load read: unknown until it loads again
				continue
			}
			ix.digests[p] = loaded[p]
		case strings.HasPrefix(prefix, p):
			if held == nil {
				held = ix.regionLocked(prefix, base)
			}
			d.Keys += loaded[prefix].Keys - held.Keys
			d.Sum += loaded[prefix].Sum - held.Sum
		}
	}
	ix.digests[prefix] = loaded[prefix]
}

// regionLocked is the digest of what the index holds strictly below the node at base, which
// is what a Load of prefix replaces: served values and skipped ones.
func (ix *Index) regionLocked(prefix string, base []string) *Digest {
	d := &Digest{}
	if id, depth := ix.tree.walk(ix.tree.root, base); depth == len(base) {
		ix.tree.walkValues(id, strings.TrimSuffix(ix.root+strings.Join(base, "/"), "/"), d)
	}
	for key, inv := range ix.invalid {
		if strings.HasPrefix(key, prefix) {
			d.Add(key, inv.revision)
		}
	}
	return d
}

// applyDigestLocked moves a key of every loaded prefix it falls under from its old revision
// (0: it was absent) to its new one (0: deleted).
func (ix *Index) applyDigestLocked(key string, oldRev, newRev int64) {
	for p, d := range ix.digests {
		if !strings.HasPrefix(key, p) {
			continue
		}
		if oldRev != 0 {
			d.remove(key, oldRev)
		}
		if newRev != 0 {
			d.Add(key, newRev)
		}
	}
}

// revisionLocked is the mod revision the index holds for key, served or skipped as invalid;
// 0 when it holds none.
func (ix *Index) revisionLocked(key string, elems []string) int64 {
	if id, depth := ix.tree.walk(ix.tree.root, elems); depth == len(elems) {
		if v := ix.tree.at(id).value; v != nil {
			return v.revision
		}
	}
	if inv, ok := ix.invalid[key]; ok {
		return inv.revision
	}
	return 0
}

// walkValues adds every value strictly below id, whose key is key, to d.
func (t *tree) walkValues(id nodeID, key string, d *Digest) {
	for name, c := range t.children(id) {
		k := key + "/" + name
		if v := t.at(c).value; v != nil {
			d.Add(k, v.revision)
		}
		t.walkValues(c, k, d)
	}
}
