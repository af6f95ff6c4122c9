package migration

// The steps of docs/migration.md around the switch (switch_test.go): the dry run
// before it, dropping `txt-owner-id` after it, the rollback, and the last step for external-dns
// --registry=noop.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// dryRunBeside is the guide's step before the switch: the writer of eu1 with the takeover's
// lines and `dry-run`, beside the running external-dns, logs once per name what the takeover
// would write (its own keys put, external-dns's keys and registry records of the name deleted)
// and writes nothing. It returns the would-be operations counted
// (writer_dry_run_ops_total) once a full resync of every wanted name has run, and stops the
// writer.
func (m *migration) dryRunBeside(t *testing.T, extra ...string) (puts, deletes int) {
	t.Helper()
	w := m.writer(t, append(slices.Clone(extra), "dry-run")...)
	defer w.Stop(t)
	want := m.wantKeys()
	deadline := time.Now().Add(20 * time.Second)
	for _, name := range slices.Sorted(maps.Keys(m.targets)) {
		// What external-dns has for the name now: the keys the takeover deletes.
		var theirs []string
		for k := range e2e.KeysUnder(t, m.cli, migPrefix) {
			if n, _ := recordName(k); n == name {
				theirs = append(theirs, k)
			}
		}
		for {
			line, problem := plannedTakeover(w.Output(), name, want, theirs)
			if problem == "" {
				t.Logf("dry run: %s", line)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the dry run logged no takeover of %s: %s\nlog:\n%s", name, problem, w.Output())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// A resync that saw every wanted record has run (it sets writer_desired_records): the names
	// have been planned both alone, as the sources added them, and in a full resync, which
	// also visits the registry records' names.
	w.WaitMetric(t, 20*time.Second, `coredns_gatewaydns_writer_desired_records{owner="`+migOwner+`"}`,
		func(v float64) bool { return int(v) == len(want) })
	lines := map[string]int{}
	prefix := `Dry run: owner "` + migOwner + `" would write `
	for l := range strings.SplitSeq(w.Output(), "\n") {
		if _, rest, ok := strings.Cut(l, prefix); ok {
			name, _, _ := strings.Cut(rest, " ")
			lines[name]++
		}
	}
	for _, name := range slices.Sorted(maps.Keys(lines)) {
		switch _, wanted := m.targets[name]; {
		case !wanted:
			t.Errorf("the dry run logged %d line(s) for %s, a name the cluster does not publish:\n%s", lines[name], name, w.Output())
		case lines[name] > 1 && !strings.HasPrefix(name, "dual."):
			// The dual-stack name's keys change at each external-dns loop: its change may be new.
			t.Errorf("the dry run logged %s %d times, want once:\n%s", name, lines[name], w.Output())
		}
	}
	for k, v := range e2e.KeysUnder(t, m.cli, migPrefix) {
		if _, ours := want[k]; ours || parseEtcdValue(v.Value).Owner == migOwner {
			t.Errorf("the dry run wrote %s = %s", k, v.Value)
		}
	}
	for _, op := range []string{"put", "delete"} {
		if v, _ := w.Metric(`coredns_gatewaydns_writer_writes_total{op="` + op + `"}`); v != 0 {
			t.Errorf("the dry run counted %v writes (%s)", v, op)
		}
	}
	p, _ := w.Metric(`coredns_gatewaydns_writer_dry_run_ops_total{owner="` + migOwner + `",op="put"}`)
	d, _ := w.Metric(`coredns_gatewaydns_writer_dry_run_ops_total{owner="` + migOwner + `",op="delete"}`)
	return int(p), int(d)
}

// plannedTakeover finds the dry run's line for name in log: it must put the writer's keys of
// the name (want) and delete external-dns's (theirs). The dual-stack name's keys change at each
// external-dns loop: for it, one delete is enough. It returns the line, or what is missing.
func plannedTakeover(log, name string, want map[string]string, theirs []string) (line, problem string) {
	prefix := `Dry run: owner "` + migOwner + `" would write ` + name + " "
	problem = "no line " + prefix
	for l := range strings.SplitSeq(log, "\n") {
		_, l, ok := strings.Cut(l, prefix)
		if !ok {
			continue
		}
		fields := strings.Fields(l)
		var missing []string
		for k := range want {
			if n, _ := recordName(k); n == name && !slices.Contains(fields, "+"+k) {
				missing = append(missing, "+"+k)
			}
		}
		deletes := 0
		for _, k := range theirs {
			if slices.Contains(fields, "-"+k) {
				deletes++
			} else if !strings.HasPrefix(name, "dual.") {
				missing = append(missing, "-"+k)
			}
		}
		if deletes == 0 {
			missing = append(missing, "a delete of external-dns's keys")
		}
		if len(missing) == 0 {
			return prefix + l, ""
		}
		problem = fmt.Sprintf("the line %q lacks %v", prefix+l, missing)
	}
	return "", problem
}

// dropOwnerless runs deploy/etcd/drop-ownerless.sh with args against the test's etcd, as the
// guide's last step for external-dns --registry=noop, and returns its output.
func (m *migration) dropOwnerless(t *testing.T, args ...string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatalf("deploy/etcd/drop-ownerless.sh needs jq: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(root, "deploy", "etcd", "drop-ownerless.sh")}, args...)...)
	cmd.Env = append(os.Environ(), "ETCDCTL="+testenv.FindBinary(t, "etcdctl"), "ETCDCTL_ENDPOINTS="+m.etcd.ClientURL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("drop-ownerless.sh %v: %v\n%s", args, err, out)
	}
	t.Logf("drop-ownerless.sh %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// dropTxtOwnerID is the guide's step after the switch: the writer w, once external-dns's keys
// are all taken over, is started again without `txt-owner-id` (a rollout of the Corefile without
// the line). The new writer's full resync finds nothing to write, and every name stays
// answered. It returns the new writer.
func (m *migration) dropTxtOwnerID(t *testing.T, w *corednsproc.Process) *corednsproc.Process {
	t.Helper()
	poll := pollQuestions(t, m.central.DNS, m.questions)
	poll.waitRounds(t, 5, 10*time.Second)
	watch := watchKeys(t, m.cli, migPrefix)
	w.Stop(t)
	w = m.writer(t)
	w.WaitMetric(t, 30*time.Second, `coredns_gatewaydns_writer_last_sync_timestamp_seconds{owner="`+migOwner+`"}`, func(v float64) bool { return v > 0 })
	m.checkNoWrites(t, watch, 0, "the writer started again without txt-owner-id, its first full resync done")
	poll.waitRounds(t, 10, 10*time.Second)
	poll.finish(t, "every name while txt-owner-id is dropped")
	m.checkFinalKeys(t)
	return w
}

// rollBack is the guide's rollback after the switch: the writer w stops (the cluster's previous
// CoreDNS restored) and external-dns starts again with the same owner id and
// --coredns-strictly-owned, which reads the writer's keys (owner eu1) as its own: every name
// stays answered over its sync loops, and a name whose route goes is deleted by it, the
// writer's key included. It returns external-dns.
func (m *migration) rollBack(t *testing.T, w *corednsproc.Process, gone string) *testenv.ExternalDNS {
	t.Helper()
	poll := pollQuestions(t, m.central.DNS, m.questions)
	poll.waitRounds(t, 5, 10*time.Second)
	w.Stop(t)
	x := m.externalDNS(t, true)
	st := x.WaitSyncs(t, 3, 20*time.Second)
	t.Logf("external-dns --coredns-strictly-owned back: %d sync loops, %d with changes", st.Syncs, st.Changes)
	poll.waitRounds(t, 10, 10*time.Second)
	poll.finish(t, "every name during the rollback")
	m.logKeys(t, "after the rollback")

	// external-dns holds the names again: a route that goes takes its name's keys with it.
	if err := m.k8s.GW.GatewayV1().HTTPRoutes("shop").Delete(t.Context(), gone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	name := gone + "." + migDomain
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left := 0
		for k := range e2e.KeysUnder(t, m.cli, migPrefix) {
			if n, _ := recordName(k); n == name {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("external-dns left %d keys of %s after its route was deleted:\n%s", left, name, dumpKeys(e2e.KeysUnder(t, m.cli, migPrefix)))
		}
	}
	t.Logf("external-dns deleted every key of %s when its route went", name)
	return x
}

// answer is the central server's answer to label.eu1.openmcp.cluster qtype, as answerSet
// renders it, after the rcode.
func (m *migration) answer(t *testing.T, label string, qtype uint16) []string {
	t.Helper()
	r, err := e2e.Exchange("udp", m.central.DNS, label+"."+migDomain, qtype)
	if err != nil {
		t.Fatalf("%s %s: %v", label, dns.TypeToString[qtype], err)
	}
	return append([]string{dns.RcodeToString[r.Rcode]}, answerSet(r)...)
}
