package writer_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// wtPublished is a wtObserver that also records every Publication.
type wtPublished struct {
	wtObserver
	pmu  sync.Mutex
	pubs []writer.Publication
}

func (o *wtPublished) Published(p writer.Publication) {
	o.pmu.Lock()
	o.pubs = append(o.pubs, p)
	o.pmu.Unlock()
}

// waitName waits for a Publication (after the first skip of them) that reports name and
// satisfies ok, and returns it with that name's report.
func (o *wtPublished) waitName(t *testing.T, skip int, name string, ok func(writer.Publication, writer.NamePublished) bool) (writer.Publication, writer.NamePublished) {
	t.Helper()
	var pub writer.Publication
	var got writer.NamePublished
	wtEventually(t, 10*time.Second, "a publication of "+name, func() bool {
		o.pmu.Lock()
		defer o.pmu.Unlock()
		for _, p := range o.pubs[min(skip, len(o.pubs)):] {
			for _, np := range p.Names {
				if np.Name == name && ok(p, np) {
					pub, got = p, np
					return true
				}
			}
		}
		return false
	})
	return pub, got
}

func (o *wtPublished) count() int {
	o.pmu.Lock()
	defer o.pmu.Unlock()
	return len(o.pubs)
}

// TestWriterTellsWhatItPublishedAtEachName: after each reconcile the leader tells, for each name
// read, whether its owner holds records there and the revision of the transaction that last
// changed them: the commit's (a put's key mod revision) when it committed, and the same again,
// not committed, when a full resync finds nothing to change. A key of another owner withholds
// a name; a new term starts with an unsettled report, then a settled full resync that commits
// nothing and tells the revisions found.
func TestWriterTellsWhatItPublishedAtEachName(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	app, taken := wtName("app"), wtName("taken")
	d := wtWant(wtEP(app, "10.0.0.1", "10.0.0.2"))
	obs := &wtPublished{}
	w, stop := wtStart(t, cli, writer.Config{Owner: "c1", Desired: d, Observer: obs})

	first, np := obs.waitName(t, 0, app, func(p writer.Publication, np writer.NamePublished) bool { return np.Committed })
	keyRev := func(target string) int64 {
		kv := wtKeys(t, cli)[record.Key("skydns", app, "c1", target)]
		if kv == nil {
			t.Fatalf("no key of %s -> %s", app, target)
		}
		return kv.ModRevision
	}
	if !np.Held || np.Revision != keyRev("10.0.0.1") || np.Revision != keyRev("10.0.0.2") || np.Failed != nil || np.Withheld != "" {
		t.Fatalf("first commit of %s: %+v, want held at its keys' mod revision %d", app, np, keyRev("10.0.0.1"))
	}

	// A full resync that changes nothing tells the same revision, not committed, settled.
	before := obs.count()
	res, err := w.Resync(wtCtx(t))
	if err != nil || res.Txns != 0 {
		t.Fatalf("resync: %+v, %v; want no transaction", res, err)
	}
	p, again := obs.waitName(t, before, app, func(writer.Publication, writer.NamePublished) bool { return true })
	if again != (writer.NamePublished{Name: app, Held: true, Revision: np.Revision}) || !p.Settled || p.Term != first.Term {
		t.Fatalf("resync of an unchanged %s: %+v (settled %v, term %d), want %+v, settled, term %d", app, again, p.Settled, p.Term, np, first.Term)
	}

	// One target less: a delete, committed at a revision after the remaining key's.
	before = obs.count()
	d.set(wtEP(app, "10.0.0.1"))
	w.Enqueue(app)
	_, cut := obs.waitName(t, before, app, func(_ writer.Publication, np writer.NamePublished) bool { return np.Committed })
	if !cut.Held || cut.Revision <= keyRev("10.0.0.1") {
		t.Fatalf("a target deleted: %+v, want held at the delete's revision, after %d", cut, keyRev("10.0.0.1"))
	}

	// A name whose key another owner holds is withheld, and said why.
	wtPut(t, cli, record.Key("skydns", taken, "c1", "10.0.0.9"), `{"host":"10.0.0.9","owner":"c2"}`)
	before = obs.count()
	d.set(wtEP(taken, "10.0.0.9"))
	w.Enqueue(taken)
	_, held := obs.waitName(t, before, taken, func(writer.Publication, writer.NamePublished) bool { return true })
	if held.Held || held.Committed || held.Withheld == "" {
		t.Fatalf("a name another owner's key stops: %+v, want withheld, with a reason", held)
	}

	// Not wanted any more: withdrawn, committed.
	before = obs.count()
	d.remove(app)
	w.Enqueue(app)
	_, gone := obs.waitName(t, before, app, func(writer.Publication, writer.NamePublished) bool { return true })
	if gone.Held || !gone.Committed || gone.Revision <= cut.Revision {
		t.Fatalf("withdrawn: %+v, want not held, committed after %d", gone, cut.Revision)
	}

	// A new term (the writer restarted) reports what it finds, and commits nothing.
	d.set(wtEP(app, "10.0.0.1"))
	w.Enqueue(app)
	_, back := obs.waitName(t, 0, app, func(_ writer.Publication, np writer.NamePublished) bool {
		return np.Held && np.Revision > gone.Revision
	})
	stop()
	obs2 := &wtPublished{}
	wtStart(t, cli, writer.Config{Owner: "c1", Desired: d, Observer: obs2})
	p2, np2 := obs2.waitName(t, 0, app, func(p writer.Publication, _ writer.NamePublished) bool { return p.Settled })
	if p2.Term == first.Term || np2 != (writer.NamePublished{Name: app, Held: true, Revision: back.Revision}) {
		t.Fatalf("a new term's settled resync: %+v in term %d, want %+v in a term other than %d", np2, p2.Term, back, first.Term)
	}
	obs2.pmu.Lock()
	defer obs2.pmu.Unlock()
	for _, p := range obs2.pubs {
		if i := slices.IndexFunc(p.Names, func(np writer.NamePublished) bool { return np.Committed }); i >= 0 {
			t.Errorf("the new term committed %+v: a restart rewrote a record that did not change", p.Names[i])
		}
	}
}
