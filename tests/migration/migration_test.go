// Package migration tests the move from a running external-dns to the gatewaydns writer, as
// docs/migration.md prescribes it, against a real external-dns v0.21.0.
package migration

// End-to-end migration from a real external-dns v0.21.0 to the gatewaydns writer, one test per
// way external-dns ran, each following docs/migration.md step 3 (the switch:
// switch_test.go; the setup: harness_test.go).

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/e2e"
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
// no strict ownership publishes the names (its record keys carry no owner; its ownership is in
// TXT records at a-<name>, aaaa-<name>, cname-<name>), among them a dual-stack name it never
// settles and two keys an older external-dns wrote in the old format, the registry text in the
// record's own key: an address, and a CNAME that the text turns into a TXT answer (#4953). The
// writer of eu1, started beside it with `txt-owner-id eu1`, replaces every one of those keys
// by its own and deletes the registry records, each in the transaction that puts the
// replacement, while every name keeps being answered; external-dns then writes nothing and is
// stopped inside a sync loop, three times over.
func TestMigrationFromExternalDNSWithTXTRegistry(t *testing.T) {
	m := startMigration(t, true)
	// Old-format keys found by external-dns v0.21.0 when it starts: it keeps them (and writes a
	// new-format registry record beside each).
	legacyKey := hexKey("legacy." + migDomain)
	e2e.PutEtcd(t, m.cli, legacyKey, oldFormatValue("203.0.113.10", "legacy"))
	cnameKey := hexKey("oldcname." + migDomain)
	m.k8s.HTTPRoute("shop", "oldcname", "infra", "lb", "oldcname."+migDomain)
	e2e.PutEtcd(t, m.cli, cnameKey, oldFormatValue(migCNAME, "oldcname"))
	m.question("oldcname", dns.TypeA, "CNAME "+migCNAME+".")
	m.questions[len(m.questions)-1].settled = true

	x := m.externalDNS(t, false)
	m.waitPublished(t, x, "external-dns (TXT registry)")
	before := m.logKeys(t, "external-dns published")
	for _, k := range []string{legacyKey, cnameKey} {
		if _, ok := before[k]; !ok {
			t.Errorf("external-dns removed the old-format key %s", k)
		}
	}
	// external-dns v0.21.0 rewrites the old-format CNAME key and keeps the text in it.
	if k := before[cnameKey]; k.ModRev == k.CreateRev || !strings.Contains(parseEtcdValue(k.Value).Text, "heritage=external-dns") {
		t.Logf("external-dns v0.21.0 left %s as the test wrote it: %s", cnameKey, k.Value)
	} else {
		t.Logf("external-dns v0.21.0 rewrote %s, the registry text kept in it: %s", cnameKey, k.Value)
	}
	// #4953: the text makes the key a TXT record, and the name no CNAME.
	brokenA, brokenTXT := m.answer(t, "oldcname", dns.TypeA), m.answer(t, "oldcname", dns.TypeTXT)
	t.Logf("before the takeover: oldcname A %v, TXT %v", brokenA, brokenTXT)
	if slices.Contains(brokenA, "CNAME "+migCNAME+".") || !strings.Contains(strings.Join(brokenTXT, " "), "heritage=external-dns") {
		t.Errorf("oldcname answers A %v, TXT %v before the takeover: the key no longer shows #4953", brokenA, brokenTXT)
	}

	m.dryRunBeside(t, migTXTOwner)
	w, _ := m.switchBeside(t, x, 3, migTXTOwner)
	fixedA, fixedTXT := m.answer(t, "oldcname", dns.TypeA), m.answer(t, "oldcname", dns.TypeTXT)
	t.Logf("after the takeover: oldcname A %v, TXT %v", fixedA, fixedTXT)
	if !slices.Contains(fixedA, "CNAME "+migCNAME+".") || strings.Contains(strings.Join(fixedTXT, " "), "heritage=external-dns") {
		t.Errorf("oldcname answers A %v, TXT %v after the takeover, want its CNAME and no registry text", fixedA, fixedTXT)
	}
	m.dropTxtOwnerID(t, w)
	t.Logf("total %s", time.Since(m.start).Round(time.Millisecond))
}

// TestMigrationFromExternalDNSStrictlyOwned: external-dns published without
// --coredns-strictly-owned, then ran with it (what docs/migration.md step 0 once suggested): it
// reads only keys with its owner, so it wrote a second, owned key beside every ownerless one,
// and new TXT registry records. Once it is stopped (inside a sync loop), the writer of eu1,
// started with `txt-owner-id eu1`, ends with only its own keys: the owned ones, the ownerless
// ones the registry assigns to eu1 and the registry records are gone, every name answered
// throughout.
func TestMigrationFromExternalDNSStrictlyOwned(t *testing.T) {
	m := startMigration(t, false)
	x := m.externalDNS(t, false)
	m.waitPublished(t, x, "external-dns (TXT registry)")
	// The history to migrate from: stopped between two loops, not part of the switch.
	x.StopAfterSync(t, 10*time.Second)
	plain := m.logKeys(t, "external-dns without --coredns-strictly-owned published")

	xs := m.externalDNS(t, true)
	m.waitPublished(t, xs, "external-dns --coredns-strictly-owned")
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
	m.switchAfterStop(t, xs, migTXTOwner)
	t.Logf("total %s", time.Since(m.start).Round(time.Millisecond))
}

// TestMigrationFromExternalDNSStrictlyOwnedFromTheStart: external-dns ran with
// --coredns-strictly-owned from its first publish: every key of it carries "owner":"eu1", and
// it wrote TXT registry records too. Once it is stopped (inside a sync loop), the writer of eu1,
// started with `txt-owner-id eu1`, replaces its keys and deletes the registry records, every
// name answered throughout.
func TestMigrationFromExternalDNSStrictlyOwnedFromTheStart(t *testing.T) {
	m := startMigration(t, false)
	x := m.externalDNS(t, true)
	m.waitPublished(t, x, "external-dns --coredns-strictly-owned")
	keys := m.logKeys(t, "external-dns --coredns-strictly-owned published")
	for k, v := range keys {
		if owner := parseEtcdValue(v.Value).Owner; owner != migOwner {
			t.Errorf("external-dns --coredns-strictly-owned wrote %s with owner %q", k, owner)
		}
	}
	m.switchAfterStop(t, x, migTXTOwner)
	t.Logf("total %s", time.Since(m.start).Round(time.Millisecond))
}

// TestMigrationWhileExternalDNSStillRuns: the writer of eu1 (`txt-owner-id eu1`) takes over
// while external-dns (TXT registry) keeps running, with a dual-stack name and an old-format
// key among its names, and the cluster gains a name while both run: the writer publishes it
// alone, external-dns's sync loops write nothing (no ping-pong), and external-dns is stopped
// inside one of them. Every name is answered throughout, and the writer ends with exactly its
// own keys, each written once.
func TestMigrationWhileExternalDNSStillRuns(t *testing.T) {
	m := startMigration(t, true)
	legacyKey := hexKey("legacy." + migDomain)
	e2e.PutEtcd(t, m.cli, legacyKey, oldFormatValue("203.0.113.10", "legacy"))
	x := m.externalDNS(t, false)
	m.waitPublished(t, x, "external-dns (TXT registry)")
	m.logKeys(t, "external-dns published")

	m.switchBesideThen(t, x, 1, func() {
		// Asked for once it is answered; its key is one of the writer's wanted keys from now on.
		m.k8s.HTTPRoute("shop", "late", "infra", "v4", "late."+migDomain)
		m.targets["late."+migDomain] = []string{"203.0.113.10"}
		e2e.WaitFor(t, 10*time.Second, m.central.DNS, "late."+migDomain, dns.TypeA, func(r *dns.Msg) bool {
			return r.Rcode == dns.RcodeSuccess && slices.Equal(answerSet(r), []string{"A 203.0.113.10"})
		})
	}, migTXTOwner)
	t.Logf("total %s", time.Since(m.start).Round(time.Millisecond))
}

// TestMigrationFromExternalDNSWithoutRegistry: external-dns ran with --registry=noop, so its
// keys have no owner and no registry record says whose they are: no writer may take them
// over. As the guide says, it is stopped first (it would rewrite and delete the writer's keys,
// since with no registry it takes every key of its domain for its own), between two writes of
// a sync loop; the writer of eu1, without `txt-owner-id`, publishes beside the ownerless keys;
// deploy/etcd/drop-ownerless.sh then lists and deletes the ownerless keys the writer's keys
// duplicate. Every name is answered throughout, and the writer's keys are all that is left.
func TestMigrationFromExternalDNSWithoutRegistry(t *testing.T) {
	m := startMigration(t, false)
	x := m.externalDNS(t, false, "--registry=noop")
	m.waitPublished(t, x, "external-dns --registry=noop")
	for k, v := range m.logKeys(t, "external-dns --registry=noop published") {
		if name, registry := recordName(k); registry || parseEtcdValue(v.Value).Owner != "" {
			t.Errorf("external-dns --registry=noop wrote %s (%s) = %s", k, name, v.Value)
		}
	}

	// A record written by hand, which the writer does not publish: listed, kept.
	manual := migPrefix + "manual/1"
	e2e.PutEtcd(t, m.cli, manual, `{"host":"192.0.2.1"}`)

	m.waitAnswered(t, 10*time.Second, true)
	poll := pollQuestions(t, m.central.DNS, m.questions)
	poll.waitRounds(t, 5, 10*time.Second)
	watch := watchKeys(t, m.cli, migPrefix)
	m.stopBetweenWrites(t, x, watch)
	m.writer(t)
	m.waitPublishedBeside(t, 30*time.Second)
	poll.waitRounds(t, 5, 10*time.Second)

	listed := m.dropOwnerless(t, migPrefix, migOwner)
	if strings.Count(listed, "keep ") != 1 || !strings.Contains(listed, "keep "+manual+"\n") || !strings.Contains(listed, "drop ") {
		t.Errorf("drop-ownerless.sh lists other keys to keep than %s, or none to drop:\n%s", manual, listed)
	}
	if keys := e2e.KeysUnder(t, m.cli, migPrefix); len(m.keyProblems(keys)) <= 1 {
		t.Errorf("listing deleted keys:\n%s", dumpKeys(keys))
	}
	m.dropOwnerless(t, "--delete", migPrefix, migOwner)
	if _, ok := e2e.KeysUnder(t, m.cli, manual)[manual]; !ok {
		t.Errorf("drop-ownerless.sh --delete deleted %s, which no key of %s duplicates", manual, migOwner)
	}
	// The guide: delete such a key by hand if it must go.
	if _, err := m.cli.Delete(t.Context(), manual); err != nil {
		t.Fatal(err)
	}
	poll.waitRounds(t, 10, 10*time.Second)
	poll.finish(t, "every name during the switch")
	m.checkWrites(t, slices.DeleteFunc(fromWriter(watch.catchUp(t), m.wantKeys()), func(e keyEvent) bool { return e.key == manual }))
	m.checkFinalKeys(t)
	t.Logf("total %s", time.Since(m.start).Round(time.Millisecond))
}

// TestMigrationRollsBackToExternalDNS: after the switch (external-dns without strict ownership,
// the writer beside it, external-dns stopped), the guide's rollback: the writer stops and
// external-dns comes back with the same owner id and --coredns-strictly-owned. It takes the
// writer's keys as its own: every name stays answered, and a route deleted afterwards takes
// its name's keys with it. The cluster is then migrated again as the guide says a rolled-back
// cluster must be, from strict ownership (3.4: external-dns stopped first, inside a loop that
// writes), and the writer ends with exactly its own keys, every name answered throughout.
func TestMigrationRollsBackToExternalDNS(t *testing.T) {
	m := startMigration(t, false)
	x := m.externalDNS(t, false)
	m.waitPublished(t, x, "external-dns (TXT registry)")
	w, _ := m.switchBeside(t, x, 1, migTXTOwner)
	const gone = "www"
	x = m.rollBack(t, w, gone)
	delete(m.targets, gone+"."+migDomain)
	m.questions = slices.DeleteFunc(m.questions, func(q migQuestion) bool { return q.name == gone+"."+migDomain })
	m.switchAfterStop(t, x, migTXTOwner)
	t.Logf("total %s", time.Since(m.start).Round(time.Millisecond))
}
