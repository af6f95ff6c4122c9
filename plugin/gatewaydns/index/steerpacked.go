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
	prep := sets.prep.Load()
	if prep == nil || prep.view != view || prep.locality != loc {
		if prep = ix.prepareProbed(sets, view, loc); prep == nil {
			p.steer = sets.steer.Load()
			return
		}
	}
	p.steer = prep.st
	if !prep.packable {
		return
	}
	p.Draw = a.draw()
	if p.Variant = prep.variant(a, p.Draw); p.Variant == 0 {
		return
	}
	p.Name = prep.packed.Load()
	p.Ref.prep = prep
}

// prepareProbed is the choice of the name's steered set prepared for view and loc, kept for the
// next probe; nil when the name has no steered set.
func (ix *Index) prepareProbed(sets *nodeSets, view *healthView, loc *steer.Locality) *steerPrep {
	set, st := sets.steered(ix.opts.ExactNames)
	if st == nil || sets.steer.Load() != st {
		return nil
	}
	prep := st.prepared(set, view, loc)
	sets.prep.Store(prep)
	return prep
}

// variant is the variant of the choice a gets with the draw rnd.
func (p *steerPrep) variant(a *Asker, rnd uint64) uint32 {
	if c := a.client(); c != (steer.Client{}) {
		var buf [maxChosen]int
		return variantOf(p.name.Choose(c, rnd, buf[:0]))
	}
	switch p.anyN {
	case 0:
		return 0
	case 1:
		return p.anyV[0]
	}
	return p.anyV[steer.Pick(p.anyCum[:p.anyN], rnd)]
}

// prepareVariants works out the variants of a client placed nowhere, as steer.Name.Choose
// draws them.
func (p *steerPrep) prepareVariants() {
	res, cum := p.name.Anywhere()
	if cum == nil {
		if p.anyV[0] = variantOf(res); p.anyV[0] != 0 {
			p.anyN = 1
		}
		return
	}
	if len(cum) > maxAny {
		return
	}
	for i, o := range res.Owners {
		if p.anyV[i] = variantOf(steer.Result{Owners: []int{o}, Rule: steer.RuleWeighted}); p.anyV[i] == 0 {
			return
		}
	}
	copy(p.anyCum[:], cum)
	p.anyN = uint8(len(cum)) // #nosec G115 -- at most maxAny
}

// keepChoice keeps p as the packed replies of the choice ref was probed with, if the name's set
// and its choice are still those of ref.
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
	ref.prep.packed.Store(p)
	return true
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
