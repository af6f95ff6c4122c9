package index

import (
	"context"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/packed"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/steer"
)

// Packed replies of steered names. A name answered from a choice among its owners has few
// answers: one per choice (an owner drawn by weight, the owners of a tier, every owner failing
// open), the same for every client the choice is the same for. Each is packed as a variant of
// the name's replies (packed.Key.Variant: the owners chosen, and whether every address is), kept
// with the choice prepared for the health view of the moment (steerPrep), so that a new view
// drops them all. A question probes with its draw (PackedAsked): the variant it gets, its reply
// when one is packed; otherwise its lookup draws the same (WithDraw) and its reply is kept as
// that variant (KeepFor). Only names whose answers are their addresses alone are packed so.

// maxVariantOwners is how many owners a name may have for its choices to be packed.
const maxVariantOwners = 31

// maxAny is how many variants of a client placed nowhere a choiceProbe holds: more, and its
// questions are not packed.
const maxAny = 4

// choiceProbe is what a probe of a steered name reads, in one object: the view and locality
// its choice is for, the variants of a client placed nowhere (anyN of them, drawn by the
// cumulative weights anyCum with steer.Pick) and the replies packed so far. Nearly every
// question of such a name is answered from it, as one of a name without a policy is from its
// packed.Name: one object more on the path, at 10k names, cost those questions a fifth of
// their time in bench phase T (the steerPrep, its packed.Name and their replies were three).
type choiceProbe struct {
	prep     *steerPrep
	view     *healthView
	locality *steer.Locality
	// packable: the set is steered for its locality, plain and not ruled, so that each choice's
	// reply may be packed.
	packable bool
	anyN     uint8
	anyV     [maxAny]uint32
	anyCum   [maxAny]uint64
	replies  packed.Name
}

// newChoiceProbe is the probe of p, with nothing packed yet.
func newChoiceProbe(p *steerPrep, packable bool) *choiceProbe {
	cp := &choiceProbe{prep: p, view: p.view, locality: p.locality, packable: packable}
	if packable {
		cp.prepareVariants(p.name)
	}
	return cp
}

// variantOf is the variant of a choice: 1 + the owners chosen as bits, the top bit when every
// address answers (fail open); 0 when it has no variant (an owner past maxVariantOwners).
func variantOf(res steer.Result) uint32 {
	var v uint32
	for _, o := range res.Owners {
		if o >= maxVariantOwners {
			return 0
		}
		v |= 1 << o
	}
	if res.AllAddresses() {
		v |= 1 << maxVariantOwners
	}
	return v
}

// probeChoice fills in p, the probe of a name whose node has sets and no packed reply, where
// its cached set is steered for a: the choice's variant, its draw, and its packed replies.
func (ix *Index) probeChoice(p *Probe, sets *nodeSets, a *Asker) {
	if a == nil {
		p.steer = sets.steer.Load()
		return
	}
	var loc *steer.Locality
	if a.placing() {
		loc = a.Locality
	}
	view := ix.view()
	cp := sets.probe.Load()
	if cp == nil || cp.view != view || cp.locality != loc {
		if cp = ix.prepareProbed(sets, view, loc); cp == nil {
			p.steer = sets.steer.Load()
			return
		}
	}
	// The steering from the node, whose line the probe has read, not from cp.prep: that
	// would be one object more on the path of every question.
	p.steer = sets.steer.Load()
	if !cp.packable {
		return
	}
	p.Draw = a.draw()
	if p.Variant = cp.variant(a, p.Draw); p.Variant == 0 {
		return
	}
	p.Name = &cp.replies
	p.Ref.prep = cp.prep
}

// prepareProbed is the probe of the name's steered set prepared for view and loc, kept for the
// next probe; nil when the name has no steered set.
func (ix *Index) prepareProbed(sets *nodeSets, view *healthView, loc *steer.Locality) *choiceProbe {
	set, st := sets.steered(ix.opts.ExactNames)
	if st == nil || sets.steer.Load() != st {
		return nil
	}
	cp := st.prepared(set, view, loc).probe.Load()
	sets.probe.Store(cp)
	return cp
}

// variant is the variant of the choice a gets with the draw rnd.
func (cp *choiceProbe) variant(a *Asker, rnd uint64) uint32 {
	if c := a.client(); c != (steer.Client{}) {
		var buf [maxChosen]int
		return variantOf(cp.prep.name.Choose(c, rnd, buf[:0]))
	}
	switch cp.anyN {
	case 0:
		return 0
	case 1:
		return cp.anyV[0]
	}
	return cp.anyV[steer.Pick(cp.anyCum[:cp.anyN], rnd)]
}

// prepareVariants works out the variants of a client placed nowhere, as steer.Name.Choose
// draws them.
func (cp *choiceProbe) prepareVariants(name *steer.Name) {
	res, cum := name.Anywhere()
	if cum == nil {
		if cp.anyV[0] = variantOf(res); cp.anyV[0] != 0 {
			cp.anyN = 1
		}
		return
	}
	if len(cum) > maxAny {
		return
	}
	for i, o := range res.Owners {
		if cp.anyV[i] = variantOf(steer.Result{Owners: []int{o}, Rule: steer.RuleWeighted}); cp.anyV[i] == 0 {
			return
		}
	}
	copy(cp.anyCum[:], cum)
	cp.anyN = uint8(len(cum)) // #nosec G115 -- at most maxAny
}

// keepChoice keeps p as the packed replies of the choice ref was probed with, if the name's set
// and its choice are still those of ref: a probe of one reply more replaces the choice's, at
// the node too. Two keeps at once may lose one reply, which the next question packs again.
func (ix *Index) keepChoice(ref PackRef, labels []string, p *packed.Name) bool {
	id, depth := ix.tree.find(labels)
	if id != ref.id || depth != len(labels) {
		return false
	}
	sets := ix.tree.sets.load(id)
	if sets == nil {
		return false
	}
	if st := sets.steer.Load(); st == nil || st.prep.Load() != ref.prep {
		return false
	}
	next := *ref.prep.probe.Load()
	next.replies = *p
	ref.prep.probe.Store(&next)
	if cur := sets.probe.Load(); cur == nil || cur.prep == ref.prep {
		sets.probe.Store(&next)
	}
	return true
}

// Count counts, in t, the owners of the variant p found, for the question a packed reply of
// that variant answered.
func (p Probe) Count(t *steer.Tally) {
	if t == nil || p.Variant == 0 || p.Ref.prep == nil || !t.Counts(p.Ref.prep.st.nameKey) {
		return
	}
	var buf [maxVariantOwners]int
	chosen := buf[:0]
	for o := range maxVariantOwners {
		if p.Variant&(1<<o) != 0 {
			chosen = append(chosen, o)
		}
	}
	t.Count(p.Ref.prep.st.nameKey, p.Ref.prep.name.Owners(), chosen)
}

// drawKey keys a question's draw in its context.
type drawKey struct{}

// WithDraw is ctx carrying the draw of a question whose probe found a steered name (Probe.Draw),
// so that its lookup chooses as the probe did.
func WithDraw(ctx context.Context, draw uint64) context.Context {
	return context.WithValue(ctx, drawKey{}, draw)
}

// DrawOf is the draw ctx carries; ok is false when it carries none.
func DrawOf(ctx context.Context) (draw uint64, ok bool) {
	draw, ok = ctx.Value(drawKey{}).(uint64)
	return draw, ok
}
