// What each object published: the writer tells, after each reconcile, what its owner holds at
// each name it read (Publication); this turns that into each object's published names and the
// etcd revision that committed them, and says which objects' changes are news. It is the one
// record of what an object published: the Normal Events and a DNSEndpoint's Ready condition
// are both read from it.
//
// News is a change a commit made (a record put or deleted), or a change of the names an object
// publishes seen while the term leads (a route that joins a name already published). What a
// term finds when it starts is not news: a writer that restarts, or a replica that takes over,
// first reports what is already published, unchanged, and that raises nothing. Until the
// term's first full resync made with the sources synced (Publication.Settled), only commits
// are news; after it, a name reported for the first time (one that could not be read before)
// is taken as it is found, as at the start. So an object's change is told once, by the term
// that made it; one made while no replica led, or told by a leader that died before its Event
// was sent, is not told again.

package kubesource

import (
	"slices"
	"strings"
	"sync"

	dnsrecord "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// Publication is what the writer found its owner publishing after one reconcile (the
// writer's Publication, in the terms of a package that knows no etcd).
type Publication struct {
	// Term is the leader's term; reports of a new term start from what that term finds.
	Term int64
	// Settled: a full resync made with the sources synced; once one has been reported, what
	// the term finds is news.
	Settled bool
	Names   []PublishedName
}

// PublishedName is what the owner holds at one name.
type PublishedName struct {
	Name string
	// Held: the owner holds records of the name in etcd.
	Held bool
	// Revision is the etcd revision of the transaction that last changed them (or withdrew
	// them, when Committed and not Held).
	Revision int64
	// Committed: this reconcile changed the name's records.
	Committed bool
	// Withheld says why the owner holds no records of a name its sources want.
	Withheld string
	// Failed is why the name could not be read or written; "" when it could.
	Failed string
}

// announcement is a change of what one object publishes, to be told on it.
type announcement struct {
	Object dnsrecord.ObjectRef
	// Names are the names it publishes now, sorted; none when it publishes nothing any more.
	Names []string
	// Was are the names it published before.
	Was []string
	// Revision is the etcd revision of the last transaction that changed the records of
	// Names (or, when a commit withdrew names, of that commit); 0 when nothing was committed.
	Revision int64
}

// publications is the record of what each name and object published in the current term.
// Its zero value is ready; it is safe for concurrent use.
type publications struct {
	mu      sync.Mutex
	term    int64
	settled bool
	names   map[string]*nameReport
	objects map[dnsrecord.ObjectRef]objectPublished
}

// nameReport is the last report of one name in the term.
type nameReport struct {
	seen     bool // read at least once in the term (not only failed)
	held     bool
	rev      int64
	sources  []dnsrecord.ObjectRef // the objects the name is published for (Desired's Sources)
	withheld string
	failed   string
}

// objectPublished is what one object publishes: names held for it, and the revision.
type objectPublished struct {
	names []string // sorted
	rev   int64
}

// objectChange is what one Publication changes of one object.
type objectChange struct {
	lost, gained []string
	gainedKnown  bool // a gained name was reported before: the object joined it
	committed    bool
	commitRev    int64
}

// apply records p and returns the changes that are news, by object, and the DNSEndpoints
// among the objects of the names reported (their status is looked at again). sources are the
// objects a name is published for now (Desired's Sources).
func (t *publications) apply(p Publication, sources func(name string) []dnsrecord.ObjectRef) (news []announcement, endpoints []dnsrecord.ObjectRef) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case p.Term < t.term:
		return nil, nil // a term that ended
	case p.Term > t.term || t.names == nil:
		t.term, t.settled = p.Term, false
		t.names = make(map[string]*nameReport)
		t.objects = make(map[dnsrecord.ObjectRef]objectPublished)
	}
	baseline := !t.settled
	changes := make(map[dnsrecord.ObjectRef]*objectChange)
	dnsEndpoints := make(map[dnsrecord.ObjectRef]bool)
	for _, pn := range p.Names {
		t.record(pn, sources(pn.Name), changes, dnsEndpoints)
	}
	t.settled = t.settled || p.Settled
	refs := make([]dnsrecord.ObjectRef, 0, len(changes))
	for ref := range changes {
		refs = append(refs, ref)
	}
	slices.SortFunc(refs, compareObjectRefs)
	for _, ref := range refs {
		if a, changed, isNews := t.changeObject(ref, changes[ref], baseline); changed && isNews {
			news = append(news, a)
		}
	}
	for ref := range dnsEndpoints {
		endpoints = append(endpoints, ref)
	}
	slices.SortFunc(endpoints, compareObjectRefs)
	return news, endpoints
}

// record records the report of one name, whose objects are now src, and what it changes of
// the objects it was and is published for (in changes); dnsEndpoints gets the DNSEndpoints of
// both.
func (t *publications) record(pn PublishedName, src []dnsrecord.ObjectRef, changes map[dnsrecord.ObjectRef]*objectChange, dnsEndpoints map[dnsrecord.ObjectRef]bool) {
	change := func(ref dnsrecord.ObjectRef) *objectChange {
		c := changes[ref]
		if c == nil {
			c = &objectChange{}
			changes[ref] = c
		}
		return c
	}
	prev := t.names[pn.Name]
	if prev == nil {
		prev = &nameReport{}
	}
	markDNSEndpoints(dnsEndpoints, prev.sources, src)
	if pn.Failed != "" { // what it holds is unknown: nothing changes but the failure
		if !prev.seen {
			prev.sources = src
		}
		prev.failed = pn.Failed
		t.names[pn.Name] = prev
		return
	}
	var was, now []dnsrecord.ObjectRef // the objects it was and is published for
	if prev.seen && prev.held {
		was = prev.sources
	}
	if pn.Held {
		now = src
	}
	for _, ref := range was {
		if !slices.Contains(now, ref) {
			c := change(ref)
			c.lost = append(c.lost, pn.Name)
		}
	}
	for _, ref := range now {
		if !slices.Contains(was, ref) {
			c := change(ref)
			c.gained = append(c.gained, pn.Name)
			c.gainedKnown = c.gainedKnown || prev.seen
		}
	}
	if pn.Committed {
		for _, ref := range slices.Concat(was, now) {
			c := change(ref)
			c.committed, c.commitRev = true, max(c.commitRev, pn.Revision)
		}
	}
	rev := prev.rev // a report that changes nothing may name an older key's revision: kept
	if pn.Committed || !prev.seen || prev.held != pn.Held {
		rev = pn.Revision
	}
	if !pn.Held && src == nil {
		delete(t.names, pn.Name) // nothing held, nobody asks: nothing to remember
		return
	}
	t.names[pn.Name] = &nameReport{seen: true, held: pn.Held, rev: rev, sources: src, withheld: pn.Withheld}
}

// changeObject applies c to what ref publishes. changed: names or revision differ; news: the
// change is to be told (see the file's comment).
func (t *publications) changeObject(ref dnsrecord.ObjectRef, c *objectChange, baseline bool) (a announcement, changed, news bool) {
	prev := t.objects[ref]
	names := slices.DeleteFunc(slices.Clone(prev.names), func(n string) bool { return slices.Contains(c.lost, n) })
	names = append(names, c.gained...)
	slices.Sort(names)
	names = slices.Compact(names)
	sameNames := slices.Equal(names, prev.names)
	var rev int64
	switch {
	case c.committed:
		rev = max(c.commitRev, t.newestRevision(names))
	case sameNames:
		rev = prev.rev
	default:
		rev = t.newestRevision(names)
	}
	if sameNames && rev == prev.rev {
		return announcement{}, false, false
	}
	if len(names) == 0 {
		delete(t.objects, ref)
	} else {
		t.objects[ref] = objectPublished{names: names, rev: rev}
	}
	news = c.committed || (!baseline && (len(c.lost) > 0 || c.gainedKnown))
	return announcement{Object: ref, Names: names, Was: prev.names, Revision: rev}, true, news
}

// newestRevision is the newest revision among the names' records.
func (t *publications) newestRevision(names []string) int64 {
	var rev int64
	for _, n := range names {
		if r := t.names[n]; r != nil {
			rev = max(rev, r.rev)
		}
	}
	return rev
}

// name is the last report of name in the term, if there was one.
func (t *publications) name(name string) (nameReport, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.names[name]
	if !ok {
		return nameReport{}, false
	}
	return *r, true
}

// object is what ref publishes, as far as the term has told.
func (t *publications) object(ref dnsrecord.ObjectRef) objectPublished {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.objects[ref]
}

func markDNSEndpoints(set map[dnsrecord.ObjectRef]bool, lists ...[]dnsrecord.ObjectRef) {
	for _, refs := range lists {
		for _, ref := range refs {
			if ref.Kind == source.KindDNSEndpoint {
				set[ref] = true
			}
		}
	}
}

func compareObjectRefs(a, b dnsrecord.ObjectRef) int { return strings.Compare(a.String(), b.String()) }
