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
	services, err := ix.records(state.Name(), dns.TypeTXT, false, everything)
	if err != nil {
		return nil, err
	}
	answering, err := ix.records(state.Name(), dns.TypeTXT, false, answered)
	if err != nil {
		return nil, err
	}
	answers := make(map[string]bool, len(answering))
	for _, s := range answering {
		answers[s.Key] = true
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]Origin, 0, len(services))
	for _, s := range services {
		elems := ix.elements(s.Key)
		n, depth := ix.tree.walk(elems)
		if depth < len(elems) || n.value == nil {
			continue // changed since the read above
		}
		o := n.value.origin
		origin := Origin{Key: s.Key, Host: s.Host, Text: s.Text, Owner: o.owner, Sources: o.sources, Revision: o.revision, Seen: time.Unix(0, o.seen)}
		if !answers[s.Key] {
			origin.LeftOut = "cname-rule"
		}
		out = append(out, origin)
	}
	return out, nil
}
