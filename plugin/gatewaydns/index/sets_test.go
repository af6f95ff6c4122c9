package index

import (
	"sync"
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/packed"
)

// Readers that race to cache a set at a node, some of them in chunks no one made yet, all end
// up with the one nodeSets of that node (run with -race: slots and chunks are read unlocked).
func TestRacingReadersShareOneNodeSetsPerNode(t *testing.T) {
	var st setTable
	ids := []nodeID{1, 2, arenaChunkLen - 1, arenaChunkLen, 5*arenaChunkLen + 7, 3 * arenaChunkLen}
	got := make([][]*nodeSets, 8)
	var wg sync.WaitGroup
	for r := range got {
		wg.Go(func() {
			for _, id := range ids {
				got[r] = append(got[r], st.loadOrCreate(id))
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		want := st.load(id)
		if want == nil {
			t.Fatalf("node %d has no sets after loadOrCreate", id)
		}
		for r := range got {
			if got[r][i] != want {
				t.Errorf("reader %d got other sets for node %d than the table keeps", r, id)
			}
		}
	}
	if st.load(4*arenaChunkLen) != nil {
		t.Error("a node in an unmade chunk has sets")
	}
}

// A node id given back and given to a new node leaves nothing cached for the new node.
func TestAReusedNodeIDStartsWithoutCachedSets(t *testing.T) {
	tr := newTree("/skydns/")
	id := tr.newNode("app")
	set := newAnswerSet(nil)
	tr.cache(id, belowSet, set)
	if tr.cached(id, belowSet) != set {
		t.Fatal("the set just cached is not found")
	}
	tr.sets.load(id).packed.Store(new(packed.Name))
	tr.release(id)
	if again := tr.newNode("other"); again != id {
		t.Fatalf("the arena gave %d, not the id given back (%d): the test no longer tests reuse", again, id)
	}
	for k := range setKind(len(nodeSets{}.sets)) {
		if tr.cached(id, k) != nil {
			t.Errorf("the new node of id %d has a cached set of kind %d", id, k)
		}
	}
	if sets := tr.sets.load(id); sets != nil && sets.packed.Load() != nil {
		t.Errorf("the new node of id %d has packed replies", id)
	}
}
