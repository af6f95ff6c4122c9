package index

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// A load builds its subtree in the nodes the index answers from, off the index's lock, while
// watch changes of another zone are applied and questions answered: every question finds the
// records of one load or the next, whole, never a name that both have gone missing nor the
// records of one another zone's change half made; and an aborted load leaves nothing behind.
func TestLoadsBuildBesideQuestionsAndChanges(t *testing.T) {
	zones := []string{"/skydns/test/a/", "/skydns/test/b/"}
	ix := New(Options{Prefixes: zones})
	const names = 300
	load := func(gen int) []record.KV {
		var kvs []record.KV
		for i := range names {
			kvs = append(kvs, record.KV{Key: fmt.Sprintf("%sn%03d/%d", zones[0], i, gen%2), Value: fmt.Appendf(nil, `{"host":"10.0.%d.%d"}`, gen%2, i%250), Revision: int64(gen + 1)})
		}
		return kvs
	}
	ix.Load(zones[0], load(0))
	ix.Load(zones[1], nil)
	var stop atomic.Bool
	var wrong atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				name := fmt.Sprintf("n%03d.a.test.", i%names)
				addrs, ok, err := ix.Addresses(name, dns.TypeA)
				if err != nil || !ok || len(addrs) != 1 {
					wrong.Add(1)
					first.CompareAndSwap(nil, fmt.Sprintf("%s: %v %v %v", name, addrs, ok, err))
				}
				sx, _, err := ix.records("b.test.", dns.TypeA, false, answered, nil)
				if err == nil && len(sx)%2 != 0 {
					wrong.Add(1)
					first.CompareAndSwap(nil, fmt.Sprintf("b.test.: %d records", len(sx)))
				}
			}
		})
	}
	wg.Go(func() {
		rev := int64(1000)
		for i := 0; !stop.Load(); i++ {
			rev++
			// Two records of b at one revision: a question sees both or neither.
			ix.Apply([]record.Change{
				{KV: record.KV{Key: fmt.Sprintf("%sm%d/x", zones[1], i%50), Value: []byte(`{"host":"10.1.0.1"}`), Revision: rev}, Deleted: i%100 >= 50},
				{KV: record.KV{Key: fmt.Sprintf("%sm%d/y", zones[1], i%50), Value: []byte(`{"host":"10.1.0.2"}`), Revision: rev}, Deleted: i%100 >= 50},
			})
		}
	})
	for gen := 1; gen <= 40; gen++ {
		l := ix.StartLoad(zones[0])
		kvs := load(gen)
		l.Add(kvs[:names/2])
		if gen%5 == 0 {
			l.Abort()
			continue
		}
		l.Add(kvs[names/2:])
		l.Finish(0)
	}
	stop.Store(true)
	wg.Wait()
	if n := wrong.Load(); n > 0 {
		t.Fatalf("%d wrong answers, the first: %v", n, first.Load())
	}
	if got, want := ix.Len(), ix.tree.countValues(ix.tree.root); got != want {
		t.Errorf("Len %d, the tree holds %d", got, want)
	}
	// What the tree holds is what its arena has given out: no load left nodes behind.
	counted := 0
	stack := []nodeID{ix.tree.root}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		counted++
		for _, c := range ix.tree.children(id) {
			stack = append(stack, c)
		}
	}
	if live := ix.tree.nodes.len(); live != counted {
		t.Errorf("the arena has %d nodes out, the tree %d", live, counted)
	}
}
