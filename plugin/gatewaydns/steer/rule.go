package steer

import (
	"math/bits"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// The steps of Choose, on masks of the owners. The loops go over every owner and test its
// bit: a name has a few owners.

// mask is a set of owners, one bit each: one word for up to 64 owners (on the caller's stack,
// so that a question allocates nothing), more beyond.
type mask []uint64

func (m mask) set(i int)       { m[i>>6] |= 1 << (i & 63) }
func (m mask) has(i int) bool  { return m[i>>6]&(1<<(i&63)) != 0 }
func (m mask) clear(i int)     { m[i>>6] &^= 1 << (i & 63) }
func (m mask) copyFrom(o mask) { copy(m, o) }

// andNot makes m the owners of m that are not in o, and returns it.
func (m mask) andNot(o mask) mask {
	for i := range m {
		m[i] &^= o[i]
	}
	return m
}

// and makes m the owners of both.
func (m mask) and(o mask) {
	for i := range m {
		m[i] &= o[i]
	}
}

func (m mask) empty() bool {
	for _, w := range m {
		if w != 0 {
			return false
		}
	}
	return true
}

// intersects reports whether m and o share an owner.
func (m mask) intersects(o mask) bool {
	for i := range m {
		if m[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

// appendTo appends the owners of m to res.Owners.
func (m mask) appendTo(res Result) Result {
	for w, left := range m {
		for left != 0 {
			b := bits.TrailingZeros64(left)
			res.Owners = append(res.Owners, w<<6|b)
			left &^= 1 << b
		}
	}
	return res
}

// masks are what one question works out of a name's owners.
type masks struct {
	all    mask
	elig   mask // 1: an address not held down
	pool   mask // the owners the steps so far leave
	region mask // of the client's region
	spare  mask // scratch
	own    int  // the client's own cluster, -1 when it is no owner
}

// maskCount is how many masks a question works out.
const maskCount = 5

// newMasks works out the masks of owners for client c, in words (maskCount words, zero: the
// masks of up to 64 owners, on the caller's stack; more are made); pool is what step 1 leaves.
func newMasks(owners []Owner, c Client, words []uint64) (m masks) {
	n := (len(owners) + 63) / 64
	if n > 1 {
		words = make([]uint64, maskCount*n)
	}
	n = max(n, 1)
	w := func(k int) mask { return words[k*n : (k+1)*n : (k+1)*n] }
	m.all, m.elig, m.pool, m.region, m.spare = w(0), w(1), w(2), w(3), w(4)
	drained := m.spare
	m.own = -1
	for i := range owners {
		o := &owners[i]
		m.all.set(i)
		if o.eligible() {
			m.elig.set(i)
			if o.drained() {
				drained.set(i)
			}
		}
		if c.Region != "" && o.Region == c.Region {
			m.region.set(i)
		}
		if c.Owner != "" && o.ID == c.Owner {
			m.own = i
		}
	}
	m.pool.copyFrom(m.elig)
	if m.pool.andNot(drained).empty() { // only drained owners are eligible: they answer
		m.pool.copyFrom(m.elig)
	}
	return m
}

// lowestTier narrows pool to its owners of the lowest priority, and returns that priority.
func (m *masks) lowestTier(owners []Owner) int {
	tier := record.MaxPriority + 1
	for i := range owners {
		if m.pool.has(i) {
			tier = min(tier, owners[i].Steering.Priority)
		}
	}
	for i := range owners {
		if owners[i].Steering.Priority != tier {
			m.pool.clear(i)
		}
	}
	return tier
}

// transfer is Name.Transfer: steps 1, 2 and 4.
func (m *masks) transfer(owners []Owner, dst []int) Result {
	res := Result{Owners: dst}
	if m.elig.empty() {
		res.Rule = RuleFailOpen
		return m.all.appendTo(res)
	}
	res.Tier = m.lowestTier(owners)
	return m.pool.appendTo(res)
}

// decide is Choose for any client, telling why each owner is left out when why is not nil
// (Explain).
func decide(owners []Owner, c Client, rnd uint64, dst []int, why []Why) Result {
	var words [maskCount]uint64
	m := newMasks(owners, c, words[:])
	res, done := narrow(owners, &m, c, dst, why)
	if done {
		return res
	}
	return m.draw(owners, res, rnd, why)
}

// narrow takes steps 1 to 4: done when they decide the answer (failing open, the client's own
// cluster); otherwise m.pool holds the owners of step 5, and res their tier.
func narrow(owners []Owner, m *masks, c Client, dst []int, why []Why) (res Result, done bool) {
	res = Result{Owners: dst}
	if m.elig.empty() { // 2
		res.Rule = RuleFailOpen
		return m.all.appendTo(res), true
	}
	for i := range why {
		switch {
		case !m.elig.has(i):
			why[i] = WhyDown
		case !m.pool.has(i):
			why[i] = WhyDrained
		}
	}
	if m.own >= 0 && m.pool.has(m.own) { // 3: own cluster
		res.Rule, res.Tier = RuleLocal, owners[m.own].Steering.Priority
		res.Owners = append(res.Owners, m.own)
		markBut(m.pool, m.own, why, WhyNotLocal)
		return res, true
	}
	if m.pool.intersects(m.region) { // 3: own region
		for i := range why {
			if m.pool.has(i) && !m.region.has(i) {
				why[i] = WhyOtherRegion
			}
		}
		m.pool.and(m.region)
		res.Region = true
	}
	m.spare.copyFrom(m.pool)
	res.Tier = m.lowestTier(owners) // 4
	for i := range why {
		if m.spare.has(i) && !m.pool.has(i) {
			why[i] = WhyLowerTier
		}
	}
	return res, false
}

// draw takes step 5 on the owners of m.pool: one drawn by weight when any declares one, all of
// them otherwise (or when all that is left is drained).
func (m *masks) draw(owners []Owner, res Result, rnd uint64, why []Why) Result {
	var total uint64
	weighted := false
	for i := range owners {
		if m.pool.has(i) {
			total += owners[i].weight()
			weighted = weighted || owners[i].Steering.Weighted
		}
	}
	if !weighted || total == 0 {
		return m.pool.appendTo(res)
	}
	res.Rule = RuleWeighted
	draw, _ := bits.Mul64(rnd, total) // uniform in [0, total)
	chosen := -1
	for i := range owners {
		if !m.pool.has(i) {
			continue
		}
		if w := owners[i].weight(); draw < w {
			chosen = i
			break
		} else {
			draw -= w
		}
	}
	res.Owners = append(res.Owners, chosen)
	markBut(m.pool, chosen, why, WhyNotDrawn)
	return res
}

// weights is step 5 prepared, res being what steps 1 to 4 left: for a weighted pool, the
// owners of the draw and their cumulative weights (cum nil otherwise, and res the union).
func (m *masks) weights(owners []Owner, res Result) (Result, []uint64) {
	res = m.draw(owners, res, 0, nil)
	if res.Rule != RuleWeighted {
		return res, nil
	}
	res.Owners = nil
	var cum []uint64
	var total uint64
	for i := range owners {
		if m.pool.has(i) {
			total += owners[i].weight()
			res.Owners = append(res.Owners, i)
			cum = append(cum, total)
		}
	}
	return res, cum
}

// markBut tells every owner of pool but chosen that it is out for w (why nil: none).
func markBut(pool mask, chosen int, why []Why, w Why) {
	for i := range why {
		if i != chosen && pool.has(i) {
			why[i] = w
		}
	}
}
