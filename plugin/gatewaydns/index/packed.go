package index

import (
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/packed"
)

// Packed replies (package packed) are kept at a name's node beside its answer sets, and
// dropped with them by every write that changes the name (tree.forget, tree.drop, a released
// node's slot). A name keeps them only while its answers are made of its own records alone:
// its records (those a question for it reads) are plain addresses or text, with no CNAME to
// chase, no SRV or MX target to look up elsewhere, no lease whose TTL counts down; the name
// is in the tree itself, not answered by a stored "*" whose answers are named after each
// question. Any other name is answered as before, per question.
//
// Readers build a reply outside the index's lock, so a write may come between the read of the
// records and the reply kept: the reply is kept only if the index's generation (gen, moved by
// every write under the write lock) is still the one the read began at, checked under the
// read lock, which no write holds meanwhile.

// Probe is what a question finds of its name's packed replies.
type Probe struct {
	// Name is the name's packed replies, nil when none are kept.
	Name *packed.Name
	// NX: the name does not exist (as Records says ErrNotFound for it; a question with a "*" or
	// "any" label is never NX here).
	NX bool
	// Serial is the SOA serial of the zone with the key prefix zonePrefix, for negative replies.
	Serial uint32
	// Ref is what Keep takes to keep a reply for the name made since.
	Ref PackRef
	// Variant is, for a name answered from a choice among its owners (steerpacked.go), the
	// choice this question gets, which its packed replies are told apart by (packed.Key);
	// Draw is the random number that drew it, which the question's lookup must draw with
	// (WithDraw) for its reply to be the variant's. 0 for any other name.
	Variant uint32
	Draw    uint64
	// steer is the steering of the name's answer set, when one is cached and no reply is
	// packed (Steered).
	steer *setSteer
}

// Steered reports whether the name is answered from a choice among its owners per question,
// for a stanza that places its clients or not (placing), as far as its cached answer set
// tells, and no variant of the choice may be packed: then no reply made for one question may
// be kept for the next, and the caller need not make one to offer Keep.
func (p Probe) Steered(placing bool) bool { return p.Variant == 0 && p.steer.steered(placing) }

// PackRef is a name found by Packed, for Keep: where it is, at which generation, and for a
// steered name the choice prepared that its variant is of.
type PackRef struct {
	id   nodeID
	gen  uint64
	prep *steerPrep
}

// Valid reports whether the name can keep packed replies: it is a node of its own in the tree.
func (r PackRef) Valid() bool { return r.id != 0 }

// Packed is what the index holds for a question for name (lower case) in the zone with the key
// prefix zonePrefix (e.g. "/skydns/cluster/openmcp/"): its packed replies, whether it exists,
// the zone's serial. It allocates nothing. A steered name's replies are PackedAsked's.
func (ix *Index) Packed(name, zonePrefix string) (p Probe) {
	return ix.PackedAsked(name, zonePrefix, nil)
}

// PackedAsked is Packed for a question asked by a (nil: nobody the index may place): a name
// answered from a choice among its owners gives the packed replies of the choice a gets now,
// its Variant and Draw.
func (ix *Index) PackedAsked(name, zonePrefix string, a *Asker) (p Probe) {
	var buf [maxLabels]string
	labels, star := ix.labels(buf[:0], name)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	p.Serial = ix.serialOfLocked(zonePrefix)
	if star >= 0 {
		return p
	}
	id, depth := ix.tree.find(labels)
	switch {
	case id == 0:
		p.NX = true
	case depth == len(labels):
		p.Ref = PackRef{id: id, gen: ix.gen}
		if sets := ix.tree.sets.load(id); sets != nil {
			if p.Name = sets.packed.Load(); p.Name == nil {
				ix.probeChoice(&p, sets, a)
			}
		}
	}
	return p
}

// maxLabels is how many labels a question's lookup holds on the stack; a name with more takes
// an allocation. Few names have more, and a larger array made the query path's frames grow the
// goroutine's stack once more per question (issue 37).
const maxLabels = 8

// Keep keeps p as the packed replies of the name of ref (name, lower case): only if nothing was
// written to the index since ref was taken (so the replies in p were made from the records the
// index holds now) and the name's answers are its own records' alone (see above). It reports
// whether it kept them.
func (ix *Index) Keep(ref PackRef, name string, p *packed.Name) bool {
	return ix.KeepFor(ref, name, p, false)
}

// KeepFor is Keep for a stanza that places clients (placing: steer.Locality.Configured), whose
// names of several owners are answered from a choice per question, and so keep nothing packed.
func (ix *Index) KeepFor(ref PackRef, name string, p *packed.Name, placing bool) bool {
	if !ref.Valid() {
		return false
	}
	labels, star := ix.labels(nil, name)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.gen != ref.gen || star >= 0 {
		return false
	}
	if ref.prep != nil {
		return ix.keepChoice(ref, labels, p)
	}
	if id, depth := ix.tree.find(labels); id != ref.id || depth != len(labels) || !ix.ownAnswers(id, labels, placing) {
		return false
	}
	ix.tree.sets.loadOrCreate(ref.id).packed.Store(p)
	return true
}

// ownAnswers reports whether the answers of the name of id, at labels, are made of its own
// records alone: plain addresses (plainAddresses), or a set whose records have no CNAME and no
// lease (addresses.plain), whatever the question; and the same for every question, so not
// chosen per question among its owners (steerset.go).
func (ix *Index) ownAnswers(id nodeID, labels []string, placing bool) bool {
	var buf [maxPlain]Address
	if _, ok := ix.plainAddresses(buf[:0], id, 0, placing); ok {
		return true
	}
	set := ix.nameSet(id, labels, len(labels))
	return set != nil && set.ruled() == nil && set.addresses().plain && (set.rare == nil || !set.rare.steer.steered(placing))
}
