package index

import (
	"context"
	"time"

	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
)

// Origin tells where one record of an answer came from.
type Origin struct {
	Key      string
	Host     string
	Text     string
	Owner    string    // the writer that owns the key; "" when unowned
	Sources  []string  // the objects behind it, as its writer recorded them
	Revision int64     // the etcd revision that last changed the key
	Seen     time.Time // when this server learned that value
	// LeftOut says why the record is not in the answer although the read finds it: "cname-rule"
	// for the losing side of a CNAME beside other data. Empty for records that answer.
	LeftOut string
}

// Explain returns the origin of every record an A or TXT question for the name reads, in key
// order: the same records, found the same way (subtree, query wildcards, stored wildcards).
func (ix *Index) Explain(ctx context.Context, state request.Request) ([]Origin, error) {
	services, _, err := ix.records(state.Name(), dns.TypeTXT, false, everything, nil)
	if err != nil {
		return nil, err
	}
	// What the CNAME rule leaves out of A or TXT answers: the rule keeps the records it does
	// not rule on, so a record missing from a ruled set was left out by it.
	leftOut := map[string]bool{}
	for _, qtype := range []uint16{dns.TypeA, dns.TypeTXT} {
		all := services
		if qtype != dns.TypeTXT {
			if all, _, err = ix.records(state.Name(), qtype, false, everything, nil); err != nil {
				return nil, err
			}
		}
		kept, _, err := ix.records(state.Name(), qtype, false, answered, nil)
		if err != nil {
			return nil, err
		}
		in := make(map[string]bool, len(kept))
		for _, s := range kept {
			in[s.Key] = true
		}
		for _, s := range all {
			if !in[s.Key] {
				leftOut[s.Key] = true
			}
		}
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]Origin, 0, len(services))
	for _, s := range services {
		elems := ix.elements(s.Key)
		id, depth := ix.tree.walk(ix.tree.root, elems)
		e := ix.tree.at(id).value
		if depth < len(elems) || e == nil {
			continue // changed since the read above
		}
		origin := Origin{Key: s.Key, Host: s.Host, Text: s.Text, Owner: e.ownerName(), Sources: e.sourceList(), Revision: e.revision, Seen: time.Unix(0, e.seen)}
		if leftOut[s.Key] {
			origin.LeftOut = "cname-rule"
		}
		out = append(out, origin)
	}
	return out, nil
}
