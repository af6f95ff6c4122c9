package tests

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/tcpproxy"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// TestChangesAreAnsweredWithin100ms puts, changes and deletes records in a real etcd and
// measures how long until the running server's answers reflect each change: 95 of 100 within
// 100 ms, and every one within a second. The few allowed past 100 ms are the shared machine's
// (CI runs three test binaries on two cores, under the race detector): a server that misses
// a watch event, or answers from a stale packed reply, misses the second bound.
func TestChangesAreAnsweredWithin100ms(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	addr := e2e.ServeZone(t, etcd.ClientURL, cli)
	ctx := context.Background()

	const rounds = 20
	var took []time.Duration
	measure := func(what string, change func(), name string, cond func(*dns.Msg) bool) {
		start := time.Now()
		change()
		e2e.WaitFor(t, 2*time.Second, addr, name, dns.TypeA, cond)
		d := time.Since(start)
		took = append(took, d)
		if d > time.Second {
			t.Errorf("%s of %s took %s to be answered, want <= 1s", what, name, d)
		}
	}
	for i := range rounds {
		name := fmt.Sprintf("app%d.zone.test.", i)
		key := fmt.Sprintf("/skydns/test/zone/app%d/3e6bee2e", i)
		put := func(v string) func() {
			return func() {
				if _, err := cli.Put(ctx, key, v); err != nil {
					t.Fatal(err)
				}
			}
		}
		measure("put", put(`{"host":"10.1.0.1"}`), name, e2e.AnswersWith("10.1.0.1"))
		measure("change", put(`{"host":"10.1.0.2"}`), name, e2e.AnswersWith("10.1.0.2"))
		measure("delete", func() {
			if _, err := cli.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
		}, name, e2e.IsNXDOMAIN)
	}
	slices.Sort(took)
	p50, p95 := took[len(took)/2], took[len(took)*95/100]
	if p95 > 100*time.Millisecond {
		t.Errorf("95th percentile of %d changes answered after %s, want <= 100ms (median %s, slowest %s)", len(took), p95, p50, took[len(took)-1])
	}
	t.Logf("%d puts, changes and deletes each: median %s, 95th percentile %s, slowest %s", rounds, p50, p95, took[len(took)-1])
}

// TestAnswersFromMemoryWhileEtcdIsDown stops etcd and asks again: the answers must not change,
// and once etcd is back, changes flow again.
func TestAnswersFromMemoryWhileEtcdIsDown(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	addr := e2e.ServeZone(t, etcd.ClientURL, cli)
	ctx := context.Background()
	for i := range 10 {
		if _, err := cli.Put(ctx, fmt.Sprintf("/skydns/test/zone/up%d/1", i), fmt.Sprintf(`{"host":"10.2.0.%d"}`, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	e2e.WaitFor(t, 2*time.Second, addr, "up9.zone.test.", dns.TypeA, e2e.AnswersWith("10.2.0.10"))

	etcd.Stop()
	for round := range 3 {
		for i := range 10 {
			for _, netw := range []string{"udp", "tcp"} {
				r := e2e.Ask(t, netw, addr, fmt.Sprintf("up%d.zone.test.", i), dns.TypeA)
				if want := fmt.Sprintf("10.2.0.%d", i+1); !e2e.AnswersWith(want)(r) {
					t.Fatalf("round %d, etcd down: up%d over %s answered %v, want %s", round, i, netw, r, want)
				}
			}
		}
		if r := e2e.Ask(t, "udp", addr, "nothere.zone.test.", dns.TypeA); !e2e.IsNXDOMAIN(r) {
			t.Fatalf("etcd down: unknown name answered %v, want NXDOMAIN", r)
		}
		time.Sleep(500 * time.Millisecond)
	}

	etcd.Restart()
	if _, err := cli.Put(ctx, "/skydns/test/zone/after/1", `{"host":"10.2.1.1"}`); err != nil {
		t.Fatal(err)
	}
	e2e.WaitFor(t, 30*time.Second, addr, "after.zone.test.", dns.TypeA, e2e.AnswersWith("10.2.1.1"))
}

// TestReloadsAfterCompactionWithoutLosingUpdates partitions the server from etcd, makes changes,
// compacts etcd past the server's watch revision, and heals the partition: the server must
// reload and answer every change.
func TestReloadsAfterCompactionWithoutLosingUpdates(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	proxy, err := tcpproxy.Start(strings.TrimPrefix(etcd.ClientURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	addr := e2e.ServeZone(t, "http://"+proxy.Addr, cli)
	ctx := context.Background()
	for _, kv := range [][2]string{{"keep", "10.3.0.1"}, {"change", "10.3.0.2"}, {"gone", "10.3.0.3"}} {
		if _, err := cli.Put(ctx, "/skydns/test/zone/"+kv[0]+"/1", `{"host":"`+kv[1]+`"}`); err != nil {
			t.Fatal(err)
		}
	}
	e2e.WaitFor(t, 2*time.Second, addr, "gone.zone.test.", dns.TypeA, e2e.AnswersWith("10.3.0.3"))
	before := e2e.MetricSum(t, "coredns_gatewaydns_resyncs_total", map[string]string{"reason": "compacted"})

	proxy.Cut()
	if _, err := cli.Put(ctx, "/skydns/test/zone/change/1", `{"host":"10.3.1.2"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, "/skydns/test/zone/gone/1"); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Put(ctx, "/skydns/test/zone/new/1", `{"host":"10.3.1.4"}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	// While cut off, the server answers what it had.
	if r := e2e.Ask(t, "udp", addr, "gone.zone.test.", dns.TypeA); !e2e.AnswersWith("10.3.0.3")(r) {
		t.Fatalf("partitioned: answered %v, want the last good data", r)
	}
	proxy.Restore()

	e2e.WaitFor(t, 30*time.Second, addr, "new.zone.test.", dns.TypeA, e2e.AnswersWith("10.3.1.4"))
	e2e.WaitFor(t, time.Second, addr, "change.zone.test.", dns.TypeA, e2e.AnswersWith("10.3.1.2"))
	e2e.WaitFor(t, time.Second, addr, "gone.zone.test.", dns.TypeA, e2e.IsNXDOMAIN)
	e2e.WaitFor(t, time.Second, addr, "keep.zone.test.", dns.TypeA, e2e.AnswersWith("10.3.0.1"))
	if after := e2e.MetricSum(t, "coredns_gatewaydns_resyncs_total", map[string]string{"reason": "compacted"}); after <= before {
		t.Fatalf("resyncs_total{reason=compacted} went from %v to %v: the compaction path was not taken", before, after)
	}
}

// TestExplainRevealsWhereAnswersComeFrom: with "explain", dig CH TXT <name> tells, for every
// record of the name, its key, owner, objects, revision; without it, CHAOS questions are
// refused as before.
func TestExplainRevealsWhereAnswersComeFrom(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	put, err := cli.Put(context.Background(), "/skydns/test/zone/web/5d1c0e2a", `{"host":"203.0.113.10","ttl":60,"targetstrip":1,"owner":"eu1","sources":["HTTPRoute/shop/web"]}`)
	if err != nil {
		t.Fatal(err)
	}
	port, plain := corednsproc.FreePort(t), corednsproc.FreePort(t)
	e2e.StartCoreDNS(t, fmt.Sprintf("zone.test:%d {\n gatewaydns {\n  endpoint %s\n  explain\n }\n}\nzone.test:%d {\n gatewaydns {\n  endpoint %[2]s\n }\n}\n", port, etcd.ClientURL, plain))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	// Both blocks have loaded: before its load a block answers SERVFAIL to any question, a CH
	// one too, which is not the refusal the last check looks for.
	e2e.WaitFor(t, 10*time.Second, addr, "web.zone.test.", dns.TypeA, e2e.AnswersWith("203.0.113.10"))
	e2e.WaitFor(t, 10*time.Second, fmt.Sprintf("127.0.0.1:%d", plain), "web.zone.test.", dns.TypeA, e2e.AnswersWith("203.0.113.10"))

	m := new(dns.Msg)
	m.SetQuestion("web.zone.test.", dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	for _, netw := range []string{"udp", "tcp"} {
		r, _, err := (&dns.Client{Net: netw}).Exchange(m, addr)
		if err != nil {
			t.Fatal(err)
		}
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			t.Fatalf("%s: %v", netw, r)
		}
		got := strings.Join(r.Answer[0].(*dns.TXT).Txt, " ")
		for _, want := range []string{"key=/skydns/test/zone/web/5d1c0e2a", "host=203.0.113.10", "owner=eu1", "source=HTTPRoute/shop/web", fmt.Sprintf("revision=%d", put.Header.Revision), "seen=20"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: explanation %q lacks %q", netw, got, want)
			}
		}
	}
	m.SetQuestion("nothere.zone.test.", dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	if r, _, err := new(dns.Client).Exchange(m, addr); err != nil || r.Rcode != dns.RcodeNameError {
		t.Fatalf("unknown name: %v %v", r, err)
	}
	m.SetQuestion("web.zone.test.", dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	if r, _, err := new(dns.Client).Exchange(m, fmt.Sprintf("127.0.0.1:%d", plain)); err != nil || r.Rcode != dns.RcodeRefused {
		t.Fatalf("without explain, CH questions are refused, as CoreDNS does by default: %v %v", r, err)
	}
}

// TestNegativeTTLIsTheSOAMinimum: negative-ttl sets how long resolvers cache NXDOMAIN and NODATA
// (the SOA minimum and the SOA's own TTL, RFC 2308), over UDP and TCP; without it, the etcd
// plugin's 30 s.
func TestNegativeTTLIsTheSOAMinimum(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	if _, err := etcd.Client(t).Put(context.Background(), "/skydns/test/zone/web/1", `{"host":"203.0.113.10"}`); err != nil {
		t.Fatal(err)
	}
	set, unset := corednsproc.FreePort(t), corednsproc.FreePort(t)
	e2e.StartCoreDNS(t, fmt.Sprintf("zone.test:%d {\n gatewaydns {\n  endpoint %s\n  negative-ttl 5\n }\n}\nzone.test:%d {\n gatewaydns {\n  endpoint %[2]s\n }\n}\n", set, etcd.ClientURL, unset))
	for _, tc := range []struct {
		port int
		want uint32
	}{{set, 5}, {unset, 30}} {
		addr := fmt.Sprintf("127.0.0.1:%d", tc.port)
		e2e.WaitFor(t, 10*time.Second, addr, "web.zone.test.", dns.TypeA, e2e.AnswersWith("203.0.113.10"))
		for _, q := range []struct {
			name  string
			qtype uint16
			rcode int
		}{{"nothere.zone.test.", dns.TypeA, dns.RcodeNameError}, {"web.zone.test.", dns.TypeMX, dns.RcodeSuccess}} {
			for _, netw := range []string{"udp", "tcp"} {
				r := e2e.Ask(t, netw, addr, q.name, q.qtype)
				if r.Rcode != q.rcode || len(r.Answer) != 0 || len(r.Ns) != 1 {
					t.Fatalf("%s %s over %s: %v", q.name, dns.TypeToString[q.qtype], netw, r)
				}
				soa, ok := r.Ns[0].(*dns.SOA)
				if !ok || soa.Minttl != tc.want || soa.Hdr.Ttl != tc.want {
					t.Errorf("port %d, %s %s over %s: SOA %v, want minimum and TTL %d", tc.port, q.name, dns.TypeToString[q.qtype], netw, r.Ns[0], tc.want)
				}
			}
		}
	}
}
