package tests

// End-to-end migration from a real external-dns v0.21.0 to the gatewaydns writer, one test per
// way external-dns ran (the harness: migration_harness_test.go).

import (
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// oldFormatValue is a record of external-dns's old registry format, the registry text in the
// record's own key: its coredns provider writes the text into the record when the TXT record
// has the record's name (updateTXTRecords; the registry format before v0.12; external-dns
// #4953, coredns #6110).
func oldFormatValue(target, route string) string {
	return `{"host":"` + target + `","text":"\"heritage=external-dns,external-dns/owner=eu1,external-dns/resource=httproute/shop/` +
		route + `\"","ttl":300,"targetstrip":1}`
}

// TestMigrationFromExternalDNSWithTXTRegistry: external-dns with its default TXT registry and
// no strict ownership published the names (its record keys carry no owner; its ownership is in
// TXT records at a-<name>, aaaa-<name>, cname-<name>); two keys in its old format are there,
// the registry text in the record's own key, one of them the only registry record of its name.
// Once external-dns is stopped, the writer of eu1, started with `txt-owner-id eu1`, replaces
// every one of those keys by its own and deletes the registry records, each in the transaction
// that puts the replacement, while every name keeps being answered; each of its keys is
// written once.
func TestMigrationFromExternalDNSWithTXTRegistry(t *testing.T) {
	m := startMigration(t, true)
	// An old-format key found by external-dns v0.21.0 when it starts: it keeps it (and writes
	// a new-format a-legacy record beside it).
	legacyKey := hexKey("legacy." + migDomain)
	putEtcd(t, m.cli, legacyKey, oldFormatValue("203.0.113.10", "legacy"))

	x := m.externalDNS(t, false)
	m.waitPublished(t, x, "external-dns (TXT registry)")
	x.StopAfterSync(t, 10*time.Second)
	before := m.logKeys(t, "external-dns published, then stopped")
	if _, ok := before[legacyKey]; !ok {
		t.Errorf("external-dns removed the old-format key %s", legacyKey)
	}
	// A name published by an older external-dns only: its old-format key is the only registry
	// record saying eu1 holds it.
	m.k8s.HTTPRoute("shop", "old", "infra", "v4", "old."+migDomain)
	putEtcd(t, m.cli, hexKey("old."+migDomain), oldFormatValue("203.0.113.10", "old"))
	m.question("old", dns.TypeA, "A 203.0.113.10")
	m.switchToWriter(t, migTXTOwner)
	t.Logf("total %s", time.Since(m.start).Round(time.Millisecond))
}

// TestMigrationFromExternalDNSStrictlyOwned: external-dns published without
// --coredns-strictly-owned, then ran with it (what docs/migration.md step 0 once suggested): it reads
// only keys with its owner, so it wrote a second, owned key beside every ownerless one, and new
// TXT registry records. Once it is stopped, the writer of eu1, started with `txt-owner-id eu1`,
// ends with only its own keys: the owned ones, the ownerless ones the registry assigns to eu1
// and the registry records are gone, every name answered throughout.
func TestMigrationFromExternalDNSStrictlyOwned(t *testing.T) {
	m := startMigration(t, true)
	x := m.externalDNS(t, false)
	m.waitPublished(t, x, "external-dns (TXT registry)")
	x.StopAfterSync(t, 10*time.Second)
	plain := m.logKeys(t, "external-dns without --coredns-strictly-owned published")

	xs := m.externalDNS(t, true)
	m.waitPublished(t, xs, "external-dns --coredns-strictly-owned")
	xs.StopAfterSync(t, 10*time.Second)
	strict := m.logKeys(t, "then external-dns with --coredns-strictly-owned")
	// The trap: the ownerless keys stay, beside new owned ones.
	kept, owned := 0, 0
	for k, v := range strict {
		if p, old := plain[k]; old && v.ModRev == p.ModRev {
			kept++
		} else if parseEtcdValue(v.Value).Owner == migOwner {
			owned++
		}
	}
	t.Logf("--coredns-strictly-owned left %d of the %d keys as they were and wrote %d keys with owner %s", kept, len(plain), owned, migOwner)
	if owned == 0 {
		t.Errorf("external-dns --coredns-strictly-owned wrote no key with owner %s", migOwner)
	}
	m.switchToWriter(t, migTXTOwner)
	t.Logf("total %s", time.Since(m.start).Round(time.Millisecond))
}

// TestMigrationWhileExternalDNSStillRuns: the writer of eu1 (`txt-owner-id eu1`) starts while
// external-dns (TXT registry) still runs, as in docs/migration.md step 3. The writer adopts
// every name; over the next external-dns sync loops nothing under the prefix is written by
// either (no ping-pong); external-dns is then stopped (step 4). Every name is answered
// throughout, and the writer ends with exactly its own keys, each written once. (No
// dual-stack name: external-dns alone drops its AAAA answer now and then, see startMigration.)
func TestMigrationWhileExternalDNSStillRuns(t *testing.T) {
	m := startMigration(t, false)
	x := m.externalDNS(t, false)
	m.waitPublished(t, x, "external-dns (TXT registry)")
	m.logKeys(t, "external-dns published")

	poll := pollQuestions(t, m.central.DNS, m.questions)
	poll.waitRounds(t, 5, 10*time.Second)
	watch := watchKeys(t, m.cli, migPrefix)
	began := time.Now()
	m.writer(t, migTXTOwner)
	m.waitAdopted(t, 30*time.Second)
	t.Logf("the writer ended with exactly its own keys %s after it started, external-dns running", time.Since(began).Round(time.Millisecond))

	// Both run: external-dns's next loops must leave the writer's keys alone, and the writer
	// must not write them again.
	settled := len(watch.catchUp(t))
	st := x.WaitSyncs(t, 3, 20*time.Second)
	during := watch.catchUp(t)[settled:]
	if len(during) > 0 {
		var b strings.Builder
		for _, e := range during {
			b.WriteString("  " + e.String() + "\n")
		}
		t.Errorf("%d changes under %s during %d external-dns sync loops after the adoption (ping-pong):\n%s", len(during), migPrefix, st.Syncs, b.String())
	}
	t.Logf("both running: %d external-dns sync loops (%d with changes), %d changes under %s", st.Syncs, st.Changes, len(during), migPrefix)
	if st.Changes > 0 {
		t.Logf("external-dns log (last lines):\n%s", testenv.LogTail(x.LogFile, 40))
	}

	x.Stop()
	poll.waitRounds(t, 10, 10*time.Second)
	poll.finish(t, "every name during the switch")
	m.checkWrites(t, watch.catchUp(t))
	m.checkFinalKeys(t)
	t.Logf("total %s", time.Since(m.start).Round(time.Millisecond))
}
