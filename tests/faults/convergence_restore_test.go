package faults

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// restoreEtcd is the seeded schedule's etcd restore (issue 40): a snapshot, 0.5-2.5 s of the
// churn (routes created and deleted: what the backup will lack and bring back), and every
// member restored from the snapshot, plain or with --bump-revision --mark-compacted, drawn
// from rng. The name history follows the restored store from its start: the restore takes
// away the keys written after the snapshot, which no writer deleted.
func (l *landscape) restoreEtcd(t *testing.T, rng *rand.Rand) string {
	snap := l.cluster.Snapshot(t)
	d := time.Duration(500+rng.IntN(2000)) * time.Millisecond
	bump := []uint64{0, 1_000_000}[rng.IntN(2)]
	time.Sleep(d) // the life of the store after the snapshot, drawn from the seed
	l.hist.stop()
	l.cluster.Restore(t, snap, bump)
	l.hist.follow(t, l.cluster)
	return fmt.Sprintf("restore etcd (bump %d) from a snapshot %v old", bump, d)
}
