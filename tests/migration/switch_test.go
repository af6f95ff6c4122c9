package migration

// The switch from external-dns to the writer as docs/migration.md step 3 prescribes it, and
// what the migration tests check of it (the setup: harness_test.go).
//
// How external-dns v0.21.0 stops: SIGTERM cancels its context, the etcd request of the sync
// loop in progress fails, the loop's remaining requests are never made, and the process exits
// with "Failed to do run once: context canceled". Its coredns provider writes a name one
// request at a time (a changed target: the old key deleted, then the new one put; a new name:
// its key and its TXT registry record, in map order), so a stop inside a loop that writes can
// leave a name unanswered or an ownerless key that no registry record covers, which no writer
// may touch. A loop that has nothing to write is safe to cut: the guide stops external-dns only
// when its loops write nothing, and the tests cut one of those loops (stopMidSync).

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// stopMidSync stops external-dns inside one of its sync loops, as `kubectl scale
// --replicas=0` may: its link to etcd is slowed down meanwhile, so that the loop's etcd read
// takes longer than the random wait after the loop starts (testenv.StopMidSync). It fails the
// test unless the loop was cut.
func (m *migration) stopMidSync(t *testing.T, x *testenv.ExternalDNS) {
	t.Helper()
	const delay = 100 * time.Millisecond // each way: a read takes 200ms and more
	m.link.SetDelay(delay)
	defer m.link.SetDelay(0)
	if !x.StopMidSync(t, delay, 20*time.Second) {
		t.Fatalf("the stop came between two sync loops, not inside one; external-dns log:\n%s", testenv.LogTail(x.LogFile, 10))
	}
	t.Logf("external-dns stopped inside a sync loop:\n%s", testenv.LogTail(x.LogFile, 2))
}

// switchBeside is the guide's switch for external-dns without strict ownership: with every
// question asked throughout (a settled one from the takeover on), the writer of eu1 starts
// beside the running external-dns x with the extra lines, and must end with exactly its own
// keys, each put once, each replaced key deleted in the transaction that put its replacement.
// external-dns's sync loops then write nothing, so a stop at any moment is safe: it is stopped
// inside a loop, stops times (started again in between). It returns the writer and every
// change under the prefix from the writer's first transaction on.
func (m *migration) switchBeside(t *testing.T, x *testenv.ExternalDNS, stops int, extra ...string) (*corednsproc.Process, []keyEvent) {
	t.Helper()
	return m.switchBesideThen(t, x, stops, nil, extra...)
}

// switchBesideThen is switchBeside with both calls between the takeover and the first stop:
// what the cluster does while both run.
func (m *migration) switchBesideThen(t *testing.T, x *testenv.ExternalDNS, stops int, both func(), extra ...string) (*corednsproc.Process, []keyEvent) {
	t.Helper()
	m.waitAnswered(t, 10*time.Second, false)
	poll := pollQuestions(t, m.central.DNS, m.asked(false))
	poll.waitRounds(t, 5, 10*time.Second)
	watch := watchKeys(t, m.cli, migPrefix)
	began := time.Now()
	w := m.writer(t, extra...)
	m.waitAdopted(t, 30*time.Second)
	t.Logf("the writer ended with exactly its own keys %s after it started, external-dns running", time.Since(began).Round(time.Millisecond))
	m.waitAnswered(t, 5*time.Second, true)
	polls := []*questionPoller{poll}
	if qs := m.asked(true); len(qs) > 0 {
		polls = append(polls, pollQuestions(t, m.central.DNS, qs))
	}

	adopted := len(watch.catchUp(t))
	st := x.WaitSyncs(t, 3, 20*time.Second)
	m.checkNoWrites(t, watch, adopted, fmt.Sprintf("%d external-dns sync loops after the takeover (%d with changes)", st.Syncs, st.Changes))
	if both != nil {
		both()
		st := x.WaitSyncs(t, 2, 20*time.Second)
		m.checkNoWrites(t, watch, adopted, fmt.Sprintf("the cluster's change while both run, and %d external-dns sync loops", st.Syncs))
	}
	for i := range stops {
		if i > 0 {
			x = m.externalDNS(t, false)
			x.WaitSyncs(t, 2, 20*time.Second)
		}
		m.stopMidSync(t, x)
	}
	m.checkNoWrites(t, watch, adopted, fmt.Sprintf("%d external-dns stops inside a sync loop after the takeover", stops))

	for i, p := range polls {
		p.waitRounds(t, 10, 10*time.Second)
		p.finish(t, []string{"every name during the switch", "the settled names from the takeover on"}[i])
	}
	events := fromWriter(watch.catchUp(t), m.wantKeys())
	m.checkWrites(t, events)
	m.checkFinalKeys(t)
	m.checkAdoptedCounted(t, w, events)
	return w, events
}

// stopBetweenWrites stops external-dns between two writes of one sync loop: right after it
// puts a key, its link to etcd slowed down meanwhile so that its next request is far off. It
// fails the test unless the loop was cut, and returns the key put.
func (m *migration) stopBetweenWrites(t *testing.T, x *testenv.ExternalDNS, watch *keyWatch) string {
	t.Helper()
	const delay = 100 * time.Millisecond
	m.link.SetDelay(delay)
	defer m.link.SetDelay(0)
	from := len(watch.catchUp(t))
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if e, ok := watch.firstPut(from); ok {
			x.Stop()
			if !strings.Contains(x.Log(), "Failed to do run once") {
				t.Fatalf("the stop after external-dns put %s came after its sync loop ended; log:\n%s", e.key, testenv.LogTail(x.LogFile, 10))
			}
			t.Logf("external-dns stopped right after it put %s, inside its sync loop:\n%s", e.key, testenv.LogTail(x.LogFile, 3))
			return e.key
		}
		if time.Now().After(deadline) {
			t.Fatalf("external-dns put no key within 20s; log:\n%s", testenv.LogTail(x.LogFile, 10))
		}
	}
}

// switchAfterStop is the guide's switch for external-dns with strict ownership, which must not
// run beside the writer (it reads the writer's keys as its own and rewrites them): with every
// question asked throughout, external-dns x is stopped between two writes of a sync loop (it
// rewrites an IPv6 address at each loop: the new key put, the old one not deleted yet), then
// the writer of eu1 starts with the extra lines and must end with exactly its own keys as
// switchBeside says. It returns the writer.
func (m *migration) switchAfterStop(t *testing.T, x *testenv.ExternalDNS, extra ...string) *corednsproc.Process {
	t.Helper()
	m.waitAnswered(t, 10*time.Second, true)
	poll := pollQuestions(t, m.central.DNS, m.questions)
	poll.waitRounds(t, 5, 10*time.Second)
	watch := watchKeys(t, m.cli, migPrefix)
	m.stopBetweenWrites(t, x, watch)
	m.logKeys(t, "external-dns stopped")
	poll.waitRounds(t, 5, 10*time.Second)
	began := time.Now()
	w := m.writer(t, extra...)
	m.waitAdopted(t, 30*time.Second)
	t.Logf("the writer ended with exactly its own keys %s after it started", time.Since(began).Round(time.Millisecond))
	poll.waitRounds(t, 10, 10*time.Second)
	poll.finish(t, "every name during the switch")
	events := fromWriter(watch.catchUp(t), m.wantKeys())
	m.checkWrites(t, events)
	m.checkFinalKeys(t)
	m.checkAdoptedCounted(t, w, events)
	return w
}

// asked are the questions asked throughout (settled false) or from the takeover on.
func (m *migration) asked(settled bool) []migQuestion {
	var qs []migQuestion
	for _, q := range m.questions {
		if q.settled == settled {
			qs = append(qs, q)
		}
	}
	return qs
}

// checkNoWrites fails the test when the watch saw a change under the prefix after its first
// from events, other than the writer putting one of its wanted keys (a name the cluster gained).
func (m *migration) checkNoWrites(t *testing.T, watch *keyWatch, from int, during string) {
	t.Helper()
	want := m.wantKeys()
	events := slices.DeleteFunc(watch.catchUp(t)[from:], func(e keyEvent) bool {
		_, ours := want[e.key]
		return ours && e.put
	})
	if len(events) == 0 {
		t.Logf("%s: no change under %s", during, migPrefix)
		return
	}
	var b strings.Builder
	for _, e := range events {
		b.WriteString("  " + e.String() + "\n")
	}
	t.Errorf("%s: %d changes under %s, want none:\n%s", during, len(events), migPrefix, b.String())
}

// fromWriter are the events from the writer's first transaction on: before it, external-dns
// was still rewriting its dual-stack name.
func fromWriter(events []keyEvent, want map[string]string) []keyEvent {
	for _, e := range events {
		if _, ours := want[e.key]; ours && e.put {
			return slices.DeleteFunc(slices.Clone(events), func(o keyEvent) bool { return o.rev < e.rev })
		}
	}
	return nil
}

// checkWrites fails the test when a key of the writer was put more than once in events, or
// when a key the writer replaced was deleted in another transaction than a put of the writer
// for the same name (the put and the delete of one replacement share a revision). A key
// deleted after the writer's keys of its name were put is no replacement: external-dns wrote it
// after the takeover (a sync loop in flight), beside the writer's keys.
func (m *migration) checkWrites(t *testing.T, events []keyEvent) {
	t.Helper()
	want := m.wantKeys()
	puts := map[string]int{}
	putRevs := map[string][]int64{} // name -> revisions of the writer's puts for it
	for _, e := range events {
		if _, ours := want[e.key]; ours && e.put {
			puts[e.key]++
			name, _ := recordName(e.key)
			putRevs[name] = append(putRevs[name], e.rev)
		}
	}
	var problems []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if puts[k] != 1 {
			problems = append(problems, fmt.Sprintf("%s put %d times, want once", k, puts[k]))
		}
	}
	for _, e := range events {
		if _, ours := want[e.key]; ours || e.put {
			continue
		}
		name, _ := recordName(e.key)
		if !slices.Contains(putRevs[name], e.rev) && !slices.ContainsFunc(putRevs[name], func(r int64) bool { return r < e.rev }) {
			problems = append(problems, fmt.Sprintf("%s deleted at revision %d, in no transaction that put a key of the writer for %s (those: %v)",
				e.key, e.rev, name, putRevs[name]))
		}
	}
	var b strings.Builder
	for _, e := range events {
		b.WriteString("  " + e.String() + "\n")
	}
	if len(problems) > 0 {
		t.Errorf("writes since the switch:\n%s\nevery change under %s since the switch:\n%s", strings.Join(problems, "\n"), migPrefix, b.String())
		return
	}
	revs := map[int64]bool{}
	for _, e := range events {
		revs[e.rev] = true
	}
	t.Logf("%d changes under %s since the switch, in %d transactions, each key of the writer put once:\n%s", len(events), migPrefix, len(revs), b.String())
}

// checkAdoptedCounted: writer_adopted_keys_total counts the keys the writer deleted in taking
// them over that were not already its owner's: the keys without owner and the TXT registry
// records. (A key external-dns --coredns-strictly-owned wrote with owner eu1 is the writer's own
// key, as far as anyone can tell: deleting it is a plain delete.)
func (m *migration) checkAdoptedCounted(t *testing.T, w *corednsproc.Process, events []keyEvent) {
	t.Helper()
	want := m.wantKeys()
	deleted := 0
	for _, e := range events {
		if _, ours := want[e.key]; ours || e.put {
			continue
		}
		if v := parseEtcdValue(e.value); v.Owner != migOwner || strings.Contains(v.Text, "heritage=external-dns") {
			deleted++
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, ok := w.Metric(`coredns_gatewaydns_writer_adopted_keys_total{owner="` + migOwner + `"}`)
		if ok && int(got) == deleted {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("coredns_gatewaydns_writer_adopted_keys_total = %v (exported %v), want %d: the keys of external-dns deleted since the switch", got, ok, deleted)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitPublishedBeside waits until etcd holds every key the writer of eu1 wants, whatever else
// is there.
func (m *migration) waitPublishedBeside(t *testing.T, timeout time.Duration) {
	t.Helper()
	want := m.wantKeys()
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		keys := e2e.KeysUnder(t, m.cli, migPrefix)
		missing := 0
		for k := range want {
			if _, ok := keys[k]; !ok {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the writer did not publish %d of its keys within %s; keys under %s:\n%s", missing, timeout, migPrefix, dumpKeys(keys))
		}
	}
}
