package transfer

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// TestSecondariesFollowARestartAndARollingRestartByIXFR runs Knot and NSD as secondaries of
// primary.Corefile, first one replica, then two behind one address (CoreDNS listens with
// SO_REUSEPORT, so the kernel spreads the secondaries' queries and transfers over both, as a
// Service does). The replica restarts while a name changes, and then the two restart one after
// the other with a change during each: no transfer after the secondaries' first is the whole
// zone (each replica counts none), the secondaries hold the zone, and an IXFR from the serial a
// secondary held before the restart, after a change of one record while the primary was down,
// moves that record alone: its value is read from etcd's history, the index's journal having
// started at the restart.
func TestSecondariesFollowARestartAndARollingRestartByIXFR(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	enterpriseCorpus(t, cli, 300)
	knot := e2e.NewSecondary(t, "knot", "", nil)
	nsd := e2e.NewSecondary(t, "nsd", "", nil)
	src := strings.ReplaceAll(e2e.ReadCorefile(t, "primary.Corefile"), "{$GATEWAYDNS_SECONDARIES}", knot.DNS+" "+nsd.DNS)
	env := "GATEWAYDNS_ETCD_ENDPOINTS=" + etcd.ClientURL
	one, two := corednsproc.Prepare(t, "primary.Corefile"), corednsproc.Prepare(t, "primary.Corefile")
	two.DNS = one.DNS // behind one address
	restart := func(p *corednsproc.Process, during func()) {
		if p.Child != nil {
			p.Stop(t)
		}
		during()
		p.Start(t, src, env)
		p.WaitReady(t, 30*time.Second)
	}
	restart(one, func() {})
	for _, s := range []*e2e.Secondary{knot, nsd} {
		s.Primary = one.DNS
		s.Start(t)
	}
	waitSerial(t, 30*time.Second, one.DNS, knot, nsd)

	held := serialOf(t, one.DNS)
	restart(one, func() { changeOne(t, cli, "/skydns/cluster/openmcp/c0/node1/3e6bee2e", `{"host":"192.0.2.101"}`) })
	waitSerial(t, 10*time.Second, one.DNS, knot, nsd)
	moved, incremental := ixfrMoves(t, one.DNS, held)
	if !incremental || len(moved) != 2 {
		t.Errorf("an IXFR from serial %d, held before the restart, after a change of one address: incremental %v, moved %s; want the old and the new address", held, incremental, head(moved))
	}
	followsWithin(t, cli, "after-restart.c3.openmcp.cluster.", knot, nsd)
	waitSerial(t, 10*time.Second, one.DNS, knot, nsd)
	noneWhole(t, "the restarted replica", one) // before sameZone's AXFRs
	sameZone(t, " after the restart", one.DNS, knot, nsd)
	t.Logf("after a restart: an IXFR from before it moved %v", moved)

	restart(two, func() {})
	restart(one, func() { changeOne(t, cli, "/skydns/cluster/openmcp/c0/node2/3e6bee2e", `{"host":"192.0.2.102"}`) })
	restart(two, func() { changeOne(t, cli, "/skydns/cluster/openmcp/c1/rolled/3e6bee2e", `{"host":"192.0.2.103"}`) })
	followsWithin(t, cli, "after-rollout.c3.openmcp.cluster.", knot, nsd)
	waitSerial(t, 10*time.Second, one.DNS, knot, nsd)
	noneWhole(t, "the first replica", one)
	noneWhole(t, "the second replica", two)
	sameZone(t, " after the rolling restart", one.DNS, knot, nsd)
	if n := len(regexp.MustCompile(`AXFR, incoming, remote \S+, started`).FindAllString(knot.Log(), -1)); n != 1 || strings.Contains(knot.Log(), "AXFR-style IXFR") {
		t.Errorf("Knot took %d AXFRs (want its first alone), or an AXFR-style IXFR:\n%s", n, knot.Log())
	}
}

// changeOne puts value at key.
func changeOne(t *testing.T, cli *clientv3.Client, key, value string) {
	t.Helper()
	if _, err := cli.Put(context.Background(), key, value); err != nil {
		t.Fatal(err)
	}
}

// ixfrMoves asks addr for an IXFR from serial, as a secondary does, and returns the records it
// moves, SOAs aside, as text, and whether it is a difference (RFC 1995) rather than the zone.
func ixfrMoves(t *testing.T, addr string, serial uint32) (moved []string, incremental bool) {
	t.Helper()
	rrs, err := xfrFrom("127.0.0.1", addr, ixfr(serial), nil)
	if err != nil || len(rrs) < 2 {
		t.Fatalf("IXFR from %d: %d records, %v", serial, len(rrs), err)
	}
	second, isSOA := rrs[1].(*dns.SOA)
	for _, rr := range rrs {
		if _, ok := rr.(*dns.SOA); !ok {
			moved = append(moved, strings.ReplaceAll(rr.String(), "\t", " "))
		}
	}
	return moved, isSOA && second.Serial == serial
}

// noneWhole checks that the replica p sent no zone whole since it started, and logs how many
// IXFRs from before its journal it answered from etcd's history.
func noneWhole(t *testing.T, what string, p *corednsproc.Process) {
	t.Helper()
	full, _ := p.Metric(`coredns_gatewaydns_transfers_total{kind="full"}`)
	history, _ := p.Metric(`coredns_gatewaydns_transfers_total{kind="history"}`)
	if full != 0 {
		t.Errorf("%s sent the whole zone %v times (and %v IXFRs read from etcd's history)", what, full, history)
	}
	t.Logf("%s: %v IXFRs from before its journal, read from etcd's history", what, history)
}
