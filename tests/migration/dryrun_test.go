package migration

import (
	"testing"
	"time"
)

// TestMigrationDryRunCountsWhatTheTakeoverWrites: docs/migration.md step 3.1 beside a real
// external-dns v0.21.0 with its default TXT registry (no dual-stack name, which external-dns
// rewrites at every loop): the dry run logs each name once, with its registry records, and
// counts in writer_dry_run_ops_total exactly the puts and deletes the takeover then writes.
func TestMigrationDryRunCountsWhatTheTakeoverWrites(t *testing.T) {
	m := startMigration(t, false)
	x := m.externalDNS(t, false)
	m.waitPublished(t, x, "external-dns (TXT registry)")
	puts, deletes := m.dryRunBeside(t, migTXTOwner)

	watch := watchKeys(t, m.cli, migPrefix)
	w := m.writer(t, migTXTOwner)
	m.waitAdopted(t, 30*time.Second)
	// external-dns's next loops find nothing of theirs: nothing is written after the takeover.
	st := x.WaitSyncs(t, 2, 20*time.Second)
	events := fromWriter(watch.catchUp(t), m.wantKeys())
	m.checkWrites(t, events)
	wrote := map[bool]int{}
	for _, e := range events {
		wrote[e.put]++
	}
	t.Logf("dry run: %d puts, %d deletes; the takeover (and %d external-dns loops after it): %d puts, %d deletes",
		puts, deletes, st.Syncs, wrote[true], wrote[false])
	if puts != wrote[true] || deletes != wrote[false] {
		t.Errorf("the dry run counted %d puts and %d deletes, the takeover wrote %d and %d", puts, deletes, wrote[true], wrote[false])
	}
	if v, _ := w.Metric(`coredns_gatewaydns_writer_writes_total{owner="` + migOwner + `",op="put"}`); int(v) != wrote[true] {
		t.Errorf("writer_writes_total{op=put} = %v, want %d", v, wrote[true])
	}
}
