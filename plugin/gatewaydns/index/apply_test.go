package index

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// A large watch response is applied a slice at a time, so that questions are answered while
// it is, and each slice ends with a revision: no question sees part of a transaction. Here
// each transaction moves the one record of app to another key, beside a write elsewhere.
func TestApplyLetsQuestionsInOnlyBetweenRevisions(t *testing.T) {
	ix := New(Options{})
	appKey := func(i int) string { return fmt.Sprintf("/skydns/test/zone/app/%d", i) }
	ix.Load(ix.Root(), []record.KV{kv(appKey(0), `{"host":"10.0.0.1"}`)})
	var changes []record.Change
	for i := range 20000 {
		rev := int64(i + 2)
		changes = append(changes,
			record.Change{KV: record.KV{Key: fmt.Sprintf("/skydns/test/zone/other/%d", i), Value: []byte(`{"host":"10.0.0.2"}`), Revision: rev}},
			record.Change{KV: record.KV{Key: appKey(i), Revision: rev}, Deleted: true},
			record.Change{KV: record.KV{Key: appKey(i + 1), Value: []byte(`{"host":"10.0.0.1"}`), Revision: rev}},
		)
	}
	var stop atomic.Bool
	var partial, between atomic.Int64 // answers from part of a transaction; from between two
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			sx, _, err := ix.records("app.zone.test.", dns.TypeA, false, answered, nil)
			switch {
			case err != nil || len(sx) != 1:
				partial.Add(1)
			case sx[0].Key != appKey(0) && sx[0].Key != appKey(20000):
				between.Add(1)
			}
		}
	})
	ix.Apply(changes)
	stop.Store(true)
	wg.Wait()
	if partial.Load() > 0 {
		t.Fatalf("%d questions saw part of a transaction", partial.Load())
	}
	if between.Load() == 0 {
		t.Fatalf("no question was answered between two of the %d transactions: the lock was not let go", len(changes)/3)
	}
	t.Logf("%d questions answered between two of the %d transactions", between.Load(), len(changes)/3)
}
