package transfer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// sameSerial waits up to 5 s for every replica's SOA serial to be rev, and fails with the
// serials they show otherwise.
func sameSerial(t *testing.T, what string, rev int64, replicas ...*corednsproc.Process) {
	t.Helper()
	serials := make([]uint32, len(replicas))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		all := true
		for i, p := range replicas {
			serials[i] = serialOf(t, p.DNS)
			all = all && int64(serials[i]) == rev
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: replicas' serials %v, want all %d", what, serials, rev)
		}
	}
}

// TestReplicasServeOneSerialAndASecondaryFollowsEither runs two central replicas
// (corefile.d/primary.Corefile) of this binary on one etcd, and a secondary
// (corefile.d/secondary.Corefile) that transfers from either: the replicas' SOA serials are the
// same after a put, after a delete, not moved by a write outside the zone, and after one
// replica restarts and loads the zone again (it finds the delete's revision in etcd's history);
// and with the first replica stopped, the secondary follows the next change from the second.
func TestReplicasServeOneSerialAndASecondaryFollowsEither(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	ctx := context.Background()
	for i := range 20 {
		if _, err := cli.Put(ctx, fmt.Sprintf("/skydns/cluster/openmcp/eu1/app%d/3e6bee2e", i), fmt.Sprintf(`{"host":"203.0.113.%d"}`, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	secondary := corednsproc.Prepare(t, "secondary.Corefile")
	env := []string{"GATEWAYDNS_ETCD_ENDPOINTS=" + etcd.ClientURL, "GATEWAYDNS_SECONDARIES=" + secondary.DNS}
	one := e2e.RunCorefile(t, "primary.Corefile", env...)
	two := e2e.RunCorefile(t, "primary.Corefile", env...)
	one.WaitReady(t, 30*time.Second)
	two.WaitReady(t, 30*time.Second)
	src := e2e.ReadCorefile(t, "secondary.Corefile")
	// The secondary plugin transfers from the first of its primaries that answers.
	const primaries = "{$GATEWAYDNS_PRIMARY}"
	if !strings.Contains(src, primaries) {
		t.Fatalf("secondary.Corefile names no %s", primaries)
	}
	secondary.Start(t, strings.Replace(src, primaries, one.DNS+" "+two.DNS, 1))

	put, err := cli.Put(ctx, "/skydns/cluster/openmcp/eu1/new/3e6bee2e", `{"host":"203.0.113.99"}`)
	if err != nil {
		t.Fatal(err)
	}
	sameSerial(t, "after a put", put.Header.Revision, one, two, secondary)
	e2e.WaitFor(t, 3*time.Second, secondary.DNS, "new.eu1.openmcp.cluster.", dns.TypeA, e2e.HasAnswer)

	del, err := cli.Delete(ctx, "/skydns/cluster/openmcp/eu1/app0/3e6bee2e")
	if err != nil {
		t.Fatal(err)
	}
	sameSerial(t, "after a delete", del.Header.Revision, one, two, secondary)
	e2e.WaitFor(t, 3*time.Second, secondary.DNS, "app0.eu1.openmcp.cluster.", dns.TypeA, func(r *dns.Msg) bool { return r.Rcode == dns.RcodeNameError })

	// A write outside the zone moves etcd's revision past the delete, which no key carries now.
	outside, err := cli.Put(ctx, "/skydns/cluster/other/x/1", `{"host":"198.51.100.1"}`)
	if err != nil {
		t.Fatal(err)
	}
	two.Stop(t)
	two.Start(t, e2e.ReadCorefile(t, "primary.Corefile"), env...)
	two.WaitReady(t, 30*time.Second)
	sameSerial(t, "after the second replica restarted", del.Header.Revision, one, two, secondary)
	t.Logf("serial %d after a restart, etcd at revision %d", del.Header.Revision, outside.Header.Revision)

	one.Stop(t)
	moved, err := cli.Put(ctx, "/skydns/cluster/openmcp/eu1/moved/3e6bee2e", `{"host":"203.0.113.98"}`)
	if err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	e2e.WaitFor(t, 5*time.Second, secondary.DNS, "moved.eu1.openmcp.cluster.", dns.TypeA, e2e.HasAnswer)
	t.Logf("the secondary followed a change from the second replica %s after it", time.Since(changed).Round(time.Millisecond))
	sameSerial(t, "the secondary of the second replica", moved.Header.Revision, two, secondary)
}
