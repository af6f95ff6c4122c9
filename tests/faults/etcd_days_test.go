package faults

// The rare days of etcd (issue 40), against the real binary: etcd's members replaced one by
// one, etcd restored from a snapshot (plain, and with --bump-revision --mark-compacted), and
// etcd full (NOSPACE). One landscape is shared by the cases, which run in that order.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/promtext"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

const (
	daysZone    = "eu1.openmcp.cluster"
	daysNS      = "apps"
	daysAddress = "203.0.113.1"
	daysPrefix  = "/skydns/cluster/openmcp/"
)

// etcdDays is the landscape: a 3-member etcd with a 16 MiB quota, a kube-apiserver, the
// writer of eu1 and a central server that transfers the zone, each started once on the
// first members' endpoints: their Corefiles never change.
type etcdDays struct {
	cluster *testenv.EtcdCluster
	k8s     *gatewayfixture.Cluster
	writer  *corednsproc.Process
	central *corednsproc.Process
	routes  int
}

func startEtcdDays(t *testing.T) *etcdDays {
	// Strict reconfiguration off: its 5 s wait after each member change tests etcd, not us.
	d := &etcdDays{cluster: testenv.StartEtcdCluster(t, 3,
		testenv.WithEtcdArgs("--quota-backend-bytes=16777216", "--strict-reconfig-check=false"))}
	kube := testenv.StartKubeAPIServer(t)
	d.k8s = gatewayfixture.New(t, kube.Config)
	d.k8s.Namespace("infra")
	d.k8s.Namespace(daysNS)
	d.k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "*."+daysZone, daysAddress)
	endpoints := strings.Join(d.cluster.Endpoints(), " ")
	d.central = corednsproc.Start(t, "central.Corefile", strings.Replace(centralOn(d.cluster.Endpoints()),
		"    gatewaydns {", "    transfer {\n        to *\n    }\n    gatewaydns {", 1))
	d.writer = corednsproc.Start(t, "writer.Corefile", e2e.WriterCorefile(endpoints, "eu1", kube.KubeconfigFile, daysZone))
	d.central.WaitReady(t, 30*time.Second)
	d.writer.WaitReady(t, 60*time.Second)
	return d
}

// route creates an Accepted route of a new name and returns the name.
func (d *etcdDays) route(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("r%03d", d.routes)
	d.routes++
	d.k8s.HTTPRoute(daysNS, name, "infra", "public", name+"."+daysZone)
	return name
}

// client is a client of the members now, which has not sat out an outage in gRPC's dial
// back-off.
func (d *etcdDays) client(t *testing.T) *clientv3.Client { return d.cluster.Client(t) }

// etcdRecords are the A records etcd holds in the zone, as "name. ip".
func etcdRecords(t *testing.T, cli *clientv3.Client) []string {
	t.Helper()
	var out []string
	for key, kv := range e2e.KeysUnder(t, cli, daysPrefix) {
		name, ok := record.RecordName("skydns", key)
		var v struct{ Host string }
		if !ok || json.Unmarshal([]byte(kv.Value), &v) != nil {
			continue
		}
		out = append(out, name+". "+v.Host)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// servedRecords are the A records of the central server's zone transfer, as "name. ip".
func servedRecords(t *testing.T, addr string) []string {
	t.Helper()
	var out []string
	for _, rr := range e2e.AXFRText(t, addr) {
		f := strings.Fields(rr)
		if len(f) == 5 && f[3] == "a" {
			out = append(out, f[0]+" "+f[4])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// untilServedEqualsEtcd waits until the central server holds exactly etcd's records, and
// returns how long that took from since; it fails the test after within of since.
func (d *etcdDays) untilServedEqualsEtcd(t *testing.T, cli *clientv3.Client, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	for {
		want := etcdRecords(t, cli)
		got := servedRecords(t, d.central.DNS)
		if slices.Equal(got, want) {
			return time.Since(since)
		}
		if time.Since(since) > within {
			t.Fatalf("the server's zone never equalled etcd within %s:\nserved %v\netcd   %v", within, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// untilAnswered waits until every name of want answers the Gateway's address and every name
// of gone NXDOMAIN, and returns how long that took from since; it fails the test after within.
func (d *etcdDays) untilAnswered(t *testing.T, want, gone []string, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	for {
		var wrong []string
		for _, n := range want {
			if r, err := e2e.Exchange("udp", d.central.DNS, n+"."+daysZone+".", dns.TypeA); err != nil || !e2e.AnswersWith(daysAddress)(r) {
				wrong = append(wrong, n+" unanswered")
			}
		}
		for _, n := range gone {
			if r, err := e2e.Exchange("udp", d.central.DNS, n+"."+daysZone+".", dns.TypeA); err != nil || !e2e.IsNXDOMAIN(r) {
				wrong = append(wrong, n+" still answered")
			}
		}
		if len(wrong) == 0 {
			return time.Since(since)
		}
		if time.Since(since) > within {
			t.Fatalf("%s after: %v", within, wrong)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEtcdDays(t *testing.T) {
	d := startEtcdDays(t)
	var live []string
	for range 4 {
		live = append(live, d.route(t))
	}
	d.untilAnswered(t, live, nil, time.Now(), 15*time.Second)

	// The replacements first: a member added to a restored etcd took etcd 6 s to join (it could
	// not publish itself through raft before its request timed out), and one added after a
	// full etcd was freed raised NOSPACE again; neither tests gatewaydns.
	t.Run("members replaced", func(t *testing.T) { d.replaceMembers(t, live) })
	for _, bump := range []uint64{0, 1_000_000} {
		t.Run(fmt.Sprintf("restore bump=%d", bump), func(t *testing.T) { live = d.restore(t, bump, live) })
	}
	t.Run("NOSPACE", func(t *testing.T) { d.noSpace(t) })
}

// daysQuota is the landscape's etcd quota: 16 MiB, as the issue's.
const daysQuota = 16 << 20

// noSpace: etcd reaches its quota; a route created then is refused: within 5 s the refusal is
// logged, counted and on the route (a Warning Event). After the runbook (compact, defragment,
// alarm disarm) the route's record lands within 1 s.
func (d *etcdDays) noSpace(t *testing.T) {
	cli := d.client(t)
	testenv.FillEtcd(t, cli, daysQuota)
	name := d.route(t)
	created := time.Now()
	const refused = `Writer for owner "eu1": etcd refused the write: etcdserver: mvcc: database space exceeded`
	msg := e2e.WaitEvent(t, d.k8s, daysNS, "HTTPRoute", name, "PublishFailed", 5*time.Second)
	d.writer.WaitOutput(t, refused, 5*time.Second-time.Since(created))
	d.writer.WaitMetric(t, 5*time.Second-time.Since(created), `coredns_gatewaydns_writer_refusals_total{cause="no-space"}`, func(v float64) bool { return v >= 1 })
	d.writer.WaitMetric(t, time.Second, `coredns_gatewaydns_writer_refused{cause="no-space"}`, e2e.IsOne)
	t.Logf("refused, logged, counted and on the route %v after it was created; the Event: %s", time.Since(created).Round(time.Millisecond), msg)

	disarmed := testenv.FreeEtcd(t, cli, d.cluster.Endpoints()...)
	key := e2e.OwnKey(name+"."+daysZone, "eu1", daysAddress)
	for len(e2e.KeysUnder(t, cli, key)) == 0 {
		if time.Since(disarmed) > 5*time.Second {
			t.Fatalf("the route's record did not land within 5s of the disarm")
		}
		time.Sleep(10 * time.Millisecond) // the pace of the reads
	}
	landed := time.Since(disarmed)
	answered := d.untilAnswered(t, []string{name}, nil, disarmed, 5*time.Second)
	if landed > time.Second {
		t.Errorf("the route's record landed %v after the disarm, want within 1s", landed.Round(time.Millisecond))
	}
	t.Logf("after the disarm: landed in etcd %v, answered %v", landed.Round(time.Millisecond), answered.Round(time.Millisecond))
	d.writer.WaitMetric(t, 5*time.Second, `coredns_gatewaydns_writer_refused{cause="no-space"}`, e2e.IsZero)
	log := d.writer.Output()
	if n := strings.Count(log, refused); n != 1 {
		t.Errorf("the refusal was logged %d times, want once", n)
	}
	if n := strings.Count(log, `Writer for owner "eu1": etcd takes its writes again`); n != 1 {
		t.Errorf("its end was logged %d times, want once", n)
	}
}

// restore: a snapshot is taken; then routes are created and deleted, and keys written and
// deleted by hand; then etcd is restored from the snapshot. Within 2 s of etcd answering the
// server's zone equals etcd record for record (the hand key the snapshot brought back served,
// the one it lacks not, the one written after the restore served); within 5 s every route is
// answered and no deleted route's name is (the writer published again what the backup lacks,
// and withdrew what it brought back). It returns the routes that live after it.
func (d *etcdDays) restore(t *testing.T, bump uint64, live []string) []string {
	cli := d.client(t)
	hand := func(name string) string { return daysPrefix + "eu1/" + name + "/x1" }
	tag := fmt.Sprintf("b%d", bump%7)
	e2e.PutEtcd(t, cli, hand("kept-"+tag), `{"host":"198.51.100.1"}`)
	e2e.PutEtcd(t, cli, hand("resurrected-"+tag), `{"host":"198.51.100.2"}`)
	snap := d.cluster.Snapshot(t)

	gone := live[:2]
	for _, n := range gone {
		d.k8s.DeleteHTTPRoute(daysNS, n)
	}
	live = slices.Clone(live[2:])
	for range 3 {
		live = append(live, d.route(t))
	}
	ctx, cancel := context.WithTimeout(context.Background(), e2e.EtcdCallTimeout)
	defer cancel()
	if _, err := cli.Delete(ctx, hand("resurrected-"+tag)); err != nil {
		t.Fatal(err)
	}
	e2e.PutEtcd(t, cli, hand("lacking-"+tag), `{"host":"198.51.100.3"}`)
	d.untilAnswered(t, live, gone, time.Now(), 15*time.Second)
	d.untilServedEqualsEtcd(t, cli, time.Now(), 10*time.Second)

	d.cluster.Restore(t, snap, bump)
	answering := time.Now()
	cli = d.client(t)
	e2e.PutEtcd(t, cli, hand("after-"+tag), `{"host":"198.51.100.4"}`)
	equal := d.untilServedEqualsEtcd(t, cli, answering, 2*time.Second)
	served := servedRecords(t, d.central.DNS)
	for name, want := range map[string]bool{"kept-": true, "resurrected-": true, "lacking-": false, "after-": true} {
		has := slices.ContainsFunc(served, func(r string) bool { return strings.HasPrefix(r, name+tag+".") })
		if has != want {
			t.Errorf("hand key %s%s served: %v, want %v", name, tag, has, want)
		}
	}
	answered := d.untilAnswered(t, live, gone, answering, 5*time.Second)
	t.Logf("from etcd answering: the server equal to etcd %v, every route answered and none deleted %v; central loads %v",
		equal.Round(time.Millisecond), answered.Round(time.Millisecond), resyncs(d.central))
	return live
}

// replaceMembers removes an original member and adds a new one, three times, under a poller
// of a live name: no question goes unanswered, both processes use each new member within 10 s
// of its start (they read the member list every 5 s), a route created after each step is
// answered within 2 s, and no Corefile changed (the processes run as started, on the first
// members' endpoints, none of which is left).
func (d *etcdDays) replaceMembers(t *testing.T, live []string) {
	poll := e2e.PollDNS(d.central.DNS, live[0]+"."+daysZone+".", daysAddress)
	seeds := d.cluster.Endpoints()
	for step := 1; step <= 3; step++ {
		old := d.cluster.Members[0]
		d.cluster.RemoveMember(t, old)
		added := d.cluster.AddMember(t)
		joined := time.Now()
		for _, p := range []*corednsproc.Process{d.writer, d.central} {
			p.WaitOutput(t, "Using etcd member "+added.ClientURL, 10*time.Second-time.Since(joined))
		}
		t.Logf("step %d: %s used by both processes %v after it started", step, added.Name, time.Since(joined).Round(time.Millisecond))
		name := d.route(t)
		took := d.untilAnswered(t, []string{name}, nil, time.Now(), 10*time.Second)
		if took > 2*time.Second {
			t.Errorf("step %d: a route created after %s left and %s joined was answered after %v, want within 2s", step, old.Name, added.Name, took.Round(time.Millisecond))
		} else {
			t.Logf("step %d: %s removed, %s added; a new route answered %v after it was created", step, old.Name, added.Name, took.Round(time.Millisecond))
		}
	}
	poll.Finish(t, "a live name while every member was replaced")
	for _, ep := range d.cluster.Endpoints() {
		if slices.Contains(seeds, ep) {
			t.Fatalf("member %s is still one of the Corefile's: the test replaced nothing", ep)
		}
	}
}

// resyncs are the server's full loads from etcd that happened, by reason, for a log line.
func resyncs(p *corednsproc.Process) string {
	body, err := p.Scrape(nil)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, s := range promtext.Matching(body, "coredns_gatewaydns_resyncs_total") {
		if s.Value != 0 {
			out = append(out, fmt.Sprintf("%s %v", s.Labels["reason"], s.Value))
		}
	}
	return strings.Join(out, ", ")
}
