package tests

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corednstest "github.com/coredns/coredns/test"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// batchCorefile serves skydns.test from gatewaydns on port with prometheus and errors in front
// (the batched UDP path's default: on), and sub.skydns.test from hosts in a block of its own on
// the same port, whose names the path must leave to the server. front goes in front of
// gatewaydns; option into its stanza.
func batchCorefile(endpoint string, port, metrics int, front, option string) string {
	return fmt.Sprintf(`skydns.test:%[2]d {
    prometheus 127.0.0.1:%[3]d
    errors
%[4]s
    gatewaydns {
        endpoint %[1]s
        explain
%[5]s
    }
}
sub.skydns.test:%[2]d {
    hosts {
        192.0.2.7 x.sub.skydns.test
    }
}
`, endpoint, port, metrics, front, option)
}

// udpSockets counts the UDP sockets of this machine bound to port (any address), from
// /proc/net/udp and udp6.
func udpSockets(t *testing.T, port int) int {
	t.Helper()
	n := 0
	for _, f := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n")[1:] {
			fields := strings.Fields(l)
			if len(fields) < 2 {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(p) == port {
				n++
			}
		}
	}
	return n
}

// TestTheBatchedUDPPathAnswersAsTheServerDoes runs the batched path in process (CoreDNS's test
// server) beside CoreDNS's own listener on one port, loadbalance in front: UDP answers equal the
// same questions' answers over TCP, which the path never takes, whether answered packed (asked
// twice), handed off (EDNS options, CHAOS, another block's zone, a CNAME chased) or negative;
// answered ones count in CoreDNS's request metrics; a name's addresses come in loadbalance's
// random orders; a reload that puts log in front with udp-batch fails naming the line and
// leaves the running path alone; a reload to udp-batch off closes its sockets.
func TestTheBatchedUDPPathAnswersAsTheServerDoes(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	ctx := context.Background()
	for key, value := range map[string]string{
		"/skydns/test/skydns/a/1":     `{"host":"10.0.0.1"}`,
		"/skydns/test/skydns/a/2":     `{"host":"2001:db8::1"}`,
		"/skydns/test/skydns/txt/1":   `{"text":"hello"}`,
		"/skydns/test/skydns/alias/1": `{"host":"a.skydns.test"}`,
		"/skydns/test/skydns/chg/1":   `{"host":"10.0.0.5"}`,
		"/skydns/test/skydns/multi/1": `{"host":"10.0.1.1"}`,
		"/skydns/test/skydns/multi/2": `{"host":"10.0.1.2"}`,
		"/skydns/test/skydns/multi/3": `{"host":"10.0.1.3"}`,
	} {
		if _, err := cli.Put(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	port, metrics := corednsproc.FreePort(t), corednsproc.FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	inst, err := corednstest.CoreDNSServer(batchCorefile(etcd.ClientURL, port, metrics, "    loadbalance", ""))
	if err != nil {
		t.Fatal(err)
	}
	// The instance running at the end: a reload stops the one before it, whose shutdown must
	// not run twice.
	t.Cleanup(func() {
		inst.Stop()
		for _, err := range inst.ShutdownCallbacks() {
			t.Errorf("shutting CoreDNS down: %v", err)
		}
	})
	e2e.WaitFor(t, 10*time.Second, addr, "a.skydns.test.", dns.TypeA, e2e.HasAnswer)
	if n := udpSockets(t, port); n < 2 {
		t.Fatalf("%d UDP sockets on port %d: the batched path has none", n, port)
	}

	t.Run("answers equal TCP's", func(t *testing.T) {
		cookie := func(m *dns.Msg) {
			m.SetEdns0(1232, true)
			m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0123456789abcdef"})
		}
		for _, q := range []struct {
			name  string
			qtype uint16
			class uint16
			edns  func(*dns.Msg)
		}{
			{"a.skydns.test.", dns.TypeA, dns.ClassINET, nil},
			{"A.SkyDNS.test.", dns.TypeA, dns.ClassINET, nil},
			{"a.skydns.test.", dns.TypeAAAA, dns.ClassINET, func(m *dns.Msg) { m.SetEdns0(1232, true) }},
			{"a.skydns.test.", dns.TypeMX, dns.ClassINET, nil},
			{"txt.skydns.test.", dns.TypeTXT, dns.ClassINET, nil},
			{"nothere.skydns.test.", dns.TypeA, dns.ClassINET, nil},
			{"alias.skydns.test.", dns.TypeA, dns.ClassINET, nil},
			{"a.skydns.test.", dns.TypeA, dns.ClassINET, cookie},
			{"a.skydns.test.", dns.TypeTXT, dns.ClassCHAOS, nil},
			{"x.sub.skydns.test.", dns.TypeA, dns.ClassINET, nil},
			{"skydns.test.", dns.TypeSOA, dns.ClassINET, nil},
		} {
			for range 2 { // the second from the packed reply the first kept, where there is one
				var replies [2]*dns.Msg
				for i, netw := range []string{"udp", "tcp"} {
					m := new(dns.Msg)
					m.SetQuestion(q.name, q.qtype)
					m.Question[0].Qclass = q.class
					if q.edns != nil {
						q.edns(m)
					}
					r, _, err := (&dns.Client{Net: netw, Timeout: 3 * time.Second}).Exchange(m, addr)
					if err != nil {
						t.Fatalf("%s %s over %s: %v", q.name, dns.TypeToString[q.qtype], netw, err)
					}
					if r.Id != m.Id || len(r.Question) != 1 || r.Question[0].Name != q.name {
						t.Fatalf("%s over %s: the reply does not echo the question: %v", q.name, netw, r)
					}
					replies[i] = r
				}
				if u, tc := e2e.Render(replies[0]), e2e.Render(replies[1]); u != tc {
					t.Fatalf("%s %s: UDP and TCP differ\n--- udp\n%s--- tcp\n%s", q.name, dns.TypeToString[q.qtype], u, tc)
				}
			}
		}
	})

	t.Run("answered questions count", func(t *testing.T) {
		labels := map[string]string{"server": fmt.Sprintf("dns://:%d", port), "zone": "skydns.test.", "proto": "udp", "type": "A"}
		rcodes := map[string]string{"server": fmt.Sprintf("dns://:%d", port), "zone": "skydns.test.", "rcode": "NOERROR", "plugin": "gatewaydns"}
		batched := map[string]string{"zones": "skydns.test.", "outcome": "answered"}
		requests, noerror := e2e.MetricSum(t, "coredns_dns_requests_total", labels), e2e.MetricSum(t, "coredns_dns_responses_total", rcodes)
		answered := e2e.MetricSum(t, "coredns_gatewaydns_udp_batch_questions_total", batched)
		for range 20 {
			if r := e2e.Ask(t, "udp", addr, "a.skydns.test.", dns.TypeA); !e2e.HasAnswer(r) {
				t.Fatalf("no answer: %v", r)
			}
		}
		if got := e2e.MetricSum(t, "coredns_dns_requests_total", labels) - requests; got != 20 {
			t.Errorf("coredns_dns_requests_total grew by %v for 20 questions", got)
		}
		if got := e2e.MetricSum(t, "coredns_dns_responses_total", rcodes) - noerror; got != 20 {
			t.Errorf("coredns_dns_responses_total{rcode=NOERROR,plugin=gatewaydns} grew by %v for 20 questions", got)
		}
		// The name was asked before: every one of them is the batched path's, none handed off.
		if got := e2e.MetricSum(t, "coredns_gatewaydns_udp_batch_questions_total", batched) - answered; got != 20 {
			t.Errorf("the batched path answered %v of 20 questions", got)
		}
	})

	t.Run("addresses come in loadbalance's orders", func(t *testing.T) {
		batched := map[string]string{"zones": "skydns.test.", "outcome": "answered"}
		e2e.Ask(t, "udp", addr, "multi.skydns.test.", dns.TypeA) // packed now
		answered := e2e.MetricSum(t, "coredns_gatewaydns_udp_batch_questions_total", batched)
		orders := map[string]bool{}
		for range 60 {
			r := e2e.Ask(t, "udp", addr, "multi.skydns.test.", dns.TypeA)
			var ips []string
			for _, rr := range r.Answer {
				ips = append(ips, rr.(*dns.A).A.String())
			}
			orders[strings.Join(ips, " ")] = true
		}
		if got := e2e.MetricSum(t, "coredns_gatewaydns_udp_batch_questions_total", batched) - answered; got != 60 {
			t.Errorf("the batched path answered %v of 60 questions", got)
		}
		if len(orders) < 3 {
			t.Errorf("60 answers came in %d orders: %v", len(orders), orders)
		}
	})

	t.Run("a change is answered at once", func(t *testing.T) {
		e2e.Ask(t, "udp", addr, "chg.skydns.test.", dns.TypeA) // packed now
		if _, err := cli.Put(ctx, "/skydns/test/skydns/chg/1", `{"host":"10.0.0.6"}`); err != nil {
			t.Fatal(err)
		}
		e2e.WaitFor(t, 5*time.Second, addr, "chg.skydns.test.", dns.TypeA, func(r *dns.Msg) bool {
			return e2e.HasAnswer(r) && r.Answer[0].(*dns.A).A.String() == "10.0.0.6"
		})
		for range 5 {
			if r := e2e.Ask(t, "udp", addr, "chg.skydns.test.", dns.TypeA); r.Answer[0].(*dns.A).A.String() != "10.0.0.6" {
				t.Fatalf("the old address came back: %v", r)
			}
		}
	})

	t.Run("a reload with log in front refuses udp-batch, naming its line", func(t *testing.T) {
		sockets := udpSockets(t, port)
		bad := batchCorefile(etcd.ClientURL, port, metrics, "    log", "        udp-batch")
		next, err := inst.Restart(corednstest.NewInput(bad))
		if err == nil {
			next.Stop()
			t.Fatal("the reload succeeded")
		}
		line := 0
		for i, l := range strings.Split(bad, "\n") {
			if strings.TrimSpace(l) == "udp-batch" {
				line = i + 1
			}
		}
		if !strings.Contains(err.Error(), fmt.Sprintf(":%d: udp-batch: log in this server block must see every question", line)) {
			t.Fatalf("the error does not name line %d and log: %v", line, err)
		}
		if r := e2e.Ask(t, "udp", addr, "a.skydns.test.", dns.TypeA); !e2e.HasAnswer(r) {
			t.Fatalf("the running server no longer answers: %v", r)
		}
		if n := udpSockets(t, port); n != sockets {
			t.Fatalf("%d UDP sockets on the port after the failed reload, %d before", n, sockets)
		}
	})

	t.Run("a reload to udp-batch off closes its sockets", func(t *testing.T) {
		next, err := inst.Restart(corednstest.NewInput(batchCorefile(etcd.ClientURL, port, metrics, "", "        udp-batch off")))
		if err != nil {
			t.Fatal(err)
		}
		inst = next
		if n := udpSockets(t, port); n != 1 {
			t.Fatalf("%d UDP sockets on port %d with udp-batch off, want CoreDNS's one", n, port)
		}
		if r := e2e.Ask(t, "udp", addr, "a.skydns.test.", dns.TypeA); !e2e.HasAnswer(r) {
			t.Fatalf("no answer after the reload: %v", r)
		}
	})
}
