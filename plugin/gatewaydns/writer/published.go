package writer

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// PublishedObserver is an optional part of Observer: told, after each reconcile of a leader,
// what its owner publishes at every name the reconcile read, so that the objects behind the
// names can say what they published (an Event per change, a DNSEndpoint's Ready condition).
// A dry run publishes nothing and tells nothing.
type PublishedObserver interface {
	Published(p Publication)
}

// Publication is what one reconcile found the owner publishing.
type Publication struct {
	// Term is the leader's term (its election key's create revision): reports of one term
	// build on each other; a new term, in this replica or another, starts again from what its
	// own full resync finds.
	Term int64
	// Settled: the reconcile is a full resync that began with the sources synced. Every name
	// the owner holds and every name its sources want has been reported in the term once such
	// a resync ends; until then what is found is what the term started from, not news.
	Settled bool
	// Names are the names the reconcile read or could not, once each, sorted.
	Names []NamePublished
}

// NamePublished is what the owner publishes at one name after a reconcile.
type NamePublished struct {
	Name string
	// Held: the owner holds records of the name in etcd.
	Held bool
	// Revision is the etcd revision of the transaction that last changed the owner's records
	// of the name: this reconcile's when Committed (for a record put, its key's mod revision),
	// else the newest mod revision among the owner's keys read. 0 when it holds none and
	// committed nothing.
	Revision int64
	// Committed: this reconcile changed the owner's records of the name (put or deleted).
	Committed bool
	// Withheld says why the owner holds no records of a name its sources want (an older claim
	// holds it, the domain filter, another writer's key); "" when it holds them, or the
	// sources do not want the name.
	Withheld string
	// Failed: the name could not be read or written; what the owner holds there is unknown
	// (Held, Revision and Committed are not set).
	Failed error
}

// seenName is what one round of a reconcile found at a name (Result.seen): whether the owner
// holds records there after the round, the newest mod revision of its keys read, and why it
// holds none of a wanted name.
type seenName struct {
	held     bool
	modRev   int64
	withheld string
}

// observePublished records in res what the owner holds at each name of readable after this
// round of a reconcile committed p: the keys read (current) less the deletes and with the puts
// of each change committed. Names whose commit failed or found their keys changed are left out:
// they are failed, or read again by the next round.
func (w *Writer) observePublished(readable []string, current []plan.KV, p plan.Plan, res *Result) {
	if _, ok := w.obs.(PublishedObserver); !ok || w.cfg.DryRun {
		return
	}
	own := make(map[string]map[string]int64) // name -> own key -> mod revision
	for _, kv := range current {
		if record.OwnerOf(kv.Value) != w.cfg.Owner {
			continue
		}
		if n, ok := record.RecordName(w.cfg.Prefix, kv.Key); ok {
			if own[n] == nil {
				own[n] = make(map[string]int64)
			}
			own[n][kv.Key] = kv.ModRevision
		}
	}
	changes := make(map[string]plan.Change, len(p.Changes))
	for _, c := range p.Changes {
		changes[c.Name] = c
	}
	withheld := make(map[string]string)
	for _, c := range p.Conflicts {
		withheld[c.Name] = conflictReason(c)
	}
	for _, s := range p.Skipped {
		if s.Reason != plan.ReasonNotSynced {
			withheld[s.Name] = cmp.Or(s.Detail, string(s.Reason))
		}
	}
	stale := make(map[string]bool, len(res.stale))
	for _, n := range res.stale {
		stale[n] = true
	}
	if res.seen == nil {
		res.seen = make(map[string]seenName, len(readable))
	}
	for _, n := range readable {
		if _, failed := res.Failed[n]; failed || stale[n] {
			continue
		}
		s := seenName{withheld: withheld[n]}
		keys := own[n]
		for _, rev := range keys {
			s.modRev = max(s.modRev, rev)
		}
		held := len(keys)
		if c, changed := changes[n]; changed { // committed: not failed, not stale
			held = heldAfter(keys, c)
		}
		s.held = held > 0
		if s.held {
			s.withheld = ""
		}
		res.seen[n] = s
	}
}

// heldAfter is how many own keys a name holds once c is applied to keys.
func heldAfter(keys map[string]int64, c plan.Change) int {
	after := make(map[string]bool, len(keys)+len(c.Puts))
	for k := range keys {
		after[k] = true
	}
	for _, d := range c.Deletes {
		delete(after, d)
	}
	for _, put := range c.Puts {
		after[put.Key] = true
	}
	return len(after)
}

// conflictReason says who holds a name lost to an older claim.
func conflictReason(c plan.Conflict) string {
	if c.Detail != "" {
		return c.Detail
	}
	return fmt.Sprintf("owner %q holds this name in exclusive mode", c.Winner)
}

// tellPublished tells a PublishedObserver what the reconcile found at each of its names.
func (w *Writer) tellPublished(term *Term, res *Result, settled bool) {
	po, ok := w.obs.(PublishedObserver)
	if !ok || w.cfg.DryRun || (len(res.seen) == 0 && len(res.Failed) == 0) {
		return
	}
	names := make([]NamePublished, 0, len(res.seen)+len(res.Failed))
	for n, s := range res.seen {
		if _, failed := res.Failed[n]; failed {
			continue // a later round failed it
		}
		rev, committed := res.revs[n]
		names = append(names, NamePublished{Name: n, Held: s.held, Revision: max(rev, s.modRev),
			Committed: committed, Withheld: s.withheld})
	}
	for n, err := range res.Failed {
		names = append(names, NamePublished{Name: n, Failed: err})
	}
	slices.SortFunc(names, func(a, b NamePublished) int { return cmp.Compare(a.Name, b.Name) })
	po.Published(Publication{Term: term.Rev, Settled: settled, Names: names})
}
