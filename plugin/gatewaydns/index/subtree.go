package index

import (
	"context"
	"slices"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/request"
)

// Subtree reads. ns.dns.<zone> and apex.dns.<zone> are where SkyDNS keeps the apex's NS and
// own records, not names: the stock plugin reads each as a subtree (plugin.NS, checkForApex),
// so that the keys below them at any depth count, such as the nameserver that
// /skydns/test/skydns/dns/ns/c/ns1 and .../c/ns2 name together (c.ns.dns.skydns.test., with
// targetstrip 1). With exact names a name holds its own records alone (names.go); these reads
// keep the stock reading for the apex's directories, in the index and in a zone being
// transferred alike (package answer asks for them).

// Subtree is the records of the question's name and of every key below it, grouped, as a
// stock etcd plugin reads them, whatever Options.ExactNames says.
func (ix *Index) Subtree(ctx context.Context, state request.Request) ([]msg.Service, error) {
	if !ix.opts.ExactNames {
		return ix.Services(ctx, state, false, plugin.Options{})
	}
	var buf [16]string
	labels, _ := ix.labels(buf[:0], state.Name())
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	id := ix.tree.node(labels)
	if id == 0 {
		return nil, ErrNotFound
	}
	set := ix.tree.answerSet(id, labels, ix.opts.MaxRecords)
	if set == nil {
		return nil, ErrNotFound
	}
	return group(ix.finish(set, state.QType(), answered)), nil
}

// Subtree is Index.Subtree in the zone's copy: the records of the name and of the names below
// it, which follow it among the zone's names (the copy is made depth first, a ZoneDiff's names
// in path order, and its paths hold the whole of both directories: zonediff.go).
func (z *Zone) Subtree(_ context.Context, state request.Request) ([]msg.Service, error) {
	i, ok := z.Position(state.Name())
	if !ok {
		return nil, ErrNotFound
	}
	var recs []rec
	for j := i; j < len(z.names) && (j == i || strings.HasSuffix(z.names[j].name, "."+z.names[i].name)); j++ {
		recs = z.records(j, recs)
	}
	// Key order, as an etcd read returns them; a leaf is both its parent's record and a name
	// of its own: once.
	slices.SortFunc(recs, func(a, b rec) int { return strings.Compare(a.key, b.key) })
	recs = slices.CompactFunc(recs, func(a, b rec) bool { return a.key == b.key })
	z.last = -1 // the cached set is a name's own
	return group(finish(newAnswerSet(recs), state.QType(), answered, z.ttls)), nil
}

// addStorageDirs adds to a ZoneDiff's paths (add) every name of the apex's directories below
// labels, the zone's, now and then: a subtree read of one (Zone.Subtree) must find both sides
// whole, or the records made of all of them together (SRV weights, the NS set) would differ
// from the full transfer's.
func (h *history) addStorageDirs(labels []string, add func([]string)) {
	for _, dir := range [...]string{"ns", "apex"} {
		base := append(slices.Clip(labels), "dns", dir)
		if id := h.t.node(base); id != 0 {
			h.t.eachBelow(id, base, add)
		}
		for rest := range h.changedBelow(h.t.keyOf(base)) {
			elems := strings.Split(rest, "/")
			for n := 1; n <= len(elems); n++ {
				add(append(slices.Clip(base), elems[:n]...))
			}
		}
	}
}

// eachBelow calls f with the path of every node below id (at path), depth first.
func (t *tree) eachBelow(id nodeID, path []string, f func([]string)) {
	for el, c := range t.children(id) {
		p := append(slices.Clip(path), el)
		f(p)
		t.eachBelow(c, p, f)
	}
}
