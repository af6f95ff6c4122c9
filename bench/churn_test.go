package main

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestChurnerSplitsRecordsAmongWorkers(t *testing.T) {
	d := newDataset(1000)
	c := newChurner(nil, d.Records, 4)
	seen := map[string]int{}
	for w, part := range c.parts {
		if len(part) != 250 {
			t.Errorf("worker %d owns %d records, want 250", w, len(part))
		}
		for _, r := range part {
			seen[r.key]++
		}
	}
	for _, r := range d.Records {
		if seen[r.Key] != 1 {
			t.Errorf("%s is owned by %d workers, want 1", r.Key, seen[r.Key])
		}
	}
}

func TestChurnRecordChanges(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	r := &churnRec{key: "/benchc/cluster/openmcp/bench/h1/x", value: `{"host":"10.0.0.2","ttl":300}`, present: true}
	deletes, puts := 0, 0
	for range 10000 {
		wasPresent := r.present
		op, del := r.next(rnd)
		switch {
		case del:
			deletes++
			if !wasPresent || !op.IsDelete() || r.present {
				t.Fatalf("a delete of a record that was present=%v: op delete=%v, present after=%v", wasPresent, op.IsDelete(), r.present)
			}
		default:
			puts++
			v := string(op.ValueBytes())
			if !op.IsPut() || !r.present || !strings.HasPrefix(v, `{"host":"10.0.0.2","ttl":`) || v == r.value {
				t.Fatalf("a put of %s: op put=%v, present after=%v", v, op.IsPut(), r.present)
			}
		}
		if !wasPresent && del {
			t.Fatal("a record deleted twice in a row")
		}
	}
	// One change in deleteEvery of a present record deletes it; the next one puts it back.
	if deletes < 800 || deletes > 1000 {
		t.Errorf("%d deletes of 10000 changes, want about %d", deletes, 10000/(deleteEvery+1))
	}
}
