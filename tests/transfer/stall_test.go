package transfer

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// stallNames is how many keys the stalled transfers' zone holds: its transfer (some 8 MB, four
// records of some 50 bytes per key: a name's A and SRV records, and its record key's, whose
// port makes the SRV records) is larger than what the kernel buffers on both sides of a
// loopback connection (4 MB at most on the server's), so a client that stops reading stops the
// transfer midway.
const stallNames = 40000

func putStallNames(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	var ops []clientv3.Op
	for i := range stallNames {
		ops = append(ops, clientv3.OpPut(fmt.Sprintf("/skydns/test/zone/s%05d/1", i), fmt.Sprintf(`{"host":"10.40.%d.%d","port":8080}`, i/256, i%256)))
		if len(ops) == 100 || i == stallNames-1 {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := cli.Txn(ctx).Then(ops...).Commit()
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			ops = ops[:0]
		}
	}
}

// stalledAXFR asks addr for an AXFR of zone.test. over a connection that takes a few messages
// and then reads no more, with a receive buffer as small as the kernel allows. Closing the
// returned connection ends the stall.
func stalledAXFR(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	co := &dns.Conn{Conn: nc}
	m := new(dns.Msg)
	m.SetAxfr("zone.test.")
	if err := co.WriteMsg(m); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		r, err := co.ReadMsg()
		if err != nil {
			t.Fatalf("AXFR message %d: %v", i, err)
		}
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 {
			t.Fatalf("AXFR message %d: %v", i, r)
		}
	}
	return nc
}

// heapAlloc is the process's live heap right after a collection (the heap profile's gc=1).
func heapAlloc(t *testing.T, p *corednsproc.Process) int {
	t.Helper()
	body, err := p.PProfPage("heap?gc=1&debug=1")
	m := regexp.MustCompile(`(?m)^# HeapAlloc = (\d+)$`).FindStringSubmatch(body)
	if err != nil || m == nil {
		t.Fatalf("heap profile: %v", err)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// producers counts the goroutines that hand a transfer's records to the transfer plugin.
func producers(t *testing.T, p *corednsproc.Process) int {
	t.Helper()
	body, err := p.PProfPage("goroutine?debug=2")
	if err != nil {
		t.Fatalf("goroutine dump: %v", err)
	}
	return strings.Count(body, "gatewaydns/xfr.(*xfrRun).run.func1")
}

// steady polls f every 200 ms until it returns the same value three times in a row (up to
// 10 s), and returns that value.
func steady(f func() int) int {
	last, same := f(), 1
	for deadline := time.Now().Add(10 * time.Second); same < 3 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		v := f()
		if v == last {
			same++
		} else {
			last, same = v, 1
		}
	}
	return last
}

// waitUntil polls cond every 100 ms up to limit and reports whether it held.
func waitUntil(limit time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(limit); ; time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// stalledTransferServer starts the binary on a zone of stallNames keys, takes its baseline
// goroutines and heap, and stalls an AXFR: the transfer's producer is then blocked, holding
// its copy of the zone.
func stalledTransferServer(t *testing.T) (p *corednsproc.Process, endpoint string, baseG, baseHeap int, stalled net.Conn) {
	t.Helper()
	etcd := testenv.StartEtcd(t)
	putStallNames(t, etcd.Client(t))
	p = e2e.StartReloading(t, etcd.ClientURL)
	e2e.WaitFor(t, 30*time.Second, p.DNS, "s00001.zone.test.", dns.TypeA, e2e.AnswersWith("10.40.0.1"))
	e2e.ReloadTo(t, p, etcd.ClientURL, 1) // what a first reload sets up once is not a leak
	e2e.WaitFor(t, 10*time.Second, p.DNS, "s00001.zone.test.", dns.TypeA, e2e.AnswersWith("10.40.0.1"))
	// The new instance answers from the previous one's records until it has loaded its own;
	// then the previous feed stops.
	if !waitUntil(10*time.Second, func() bool { return strings.Count(p.Output(), fmt.Sprintf("Loaded %d keys", stallNames)) == 2 }) {
		t.Fatalf("the reloaded instance did not load its records:\n%s", p.Output())
	}
	baseG, baseHeap = steady(func() int { return p.Goroutines(t) }), heapAlloc(t, p)

	stalled = stalledAXFR(t, p.DNS)
	if !waitUntil(10*time.Second, func() bool { return producers(t, p) == 1 }) {
		t.Fatalf("no transfer producer runs while the AXFR stalls (%d)", producers(t, p))
	}
	// The producer stays blocked: the client reads no more.
	time.Sleep(time.Second)
	if n := producers(t, p); n != 1 {
		t.Fatalf("%d transfer producers a second into the stall, want 1 (blocked)", n)
	}
	t.Logf("baseline: %d goroutines, heap %d MB; stalled: %d goroutines, heap %d MB",
		baseG, baseHeap>>20, p.Goroutines(t), heapAlloc(t, p)>>20)
	return p, etcd.ClientURL, baseG, baseHeap, stalled
}

// TestAReloadEndsATransferWhoseSecondaryStoppedReading: a client asks for an AXFR, takes a few
// messages and then reads no more with its connection open. A reload ends the transfer's
// producer when it stops the old instance (after CoreDNS's 5 s grace for open connections; not
// at the 30 s stall bound), and the stopped stanza lets go of its records, so the heap is back
// at the baseline although the stalled connection holds the old instance's plugin chain;
// queries are answered throughout, and what is left (the goroutines of the stalled connection)
// goes once the client closes it.
func TestAReloadEndsATransferWhoseSecondaryStoppedReading(t *testing.T) {
	p, endpoint, baseG, baseHeap, stalled := stalledTransferServer(t)
	e2e.Ask(t, "udp", p.DNS, "s00002.zone.test.", dns.TypeA)

	reloaded := time.Now()
	e2e.ReloadTo(t, p, endpoint, 2)
	if !waitUntil(5*time.Second, func() bool { return producers(t, p) == 0 }) {
		t.Fatalf("the transfer's producer still runs %s after the reload", time.Since(reloaded).Round(time.Millisecond))
	}
	gone := time.Since(reloaded)
	e2e.WaitFor(t, 5*time.Second, p.DNS, "s00003.zone.test.", dns.TypeA, e2e.AnswersWith("10.40.0.3"))
	if r := e2e.Ask(t, "tcp", p.DNS, "s00004.zone.test.", dns.TypeA); !e2e.AnswersWith("10.40.0.4")(r) {
		t.Errorf("TCP question after the reload: %v", r)
	}
	// The copy is gone: the live heap is the baseline's (one index) give or take a tenth.
	heap := e2e.Settle(baseHeap+baseHeap/10, func() int { return heapAlloc(t, p) })
	if heap > baseHeap+baseHeap/10 {
		t.Errorf("heap %d MB after the reload, baseline %d MB: the transfer's copy of the zone, or the stopped instance's records, still held", heap>>20, baseHeap>>20)
	}
	// Left until the client goes (README, "Zone transfers"): the transfer plugin's two
	// goroutines, one blocked writing to the connection and one waiting for it, and the
	// stopped instance's TCP server, which waits for its connections (three, with caddy's).
	const stalledConn, slack = 5, 3
	withStall := e2e.Settle(baseG+stalledConn+slack, func() int { return p.Goroutines(t) })
	stalled.Close()
	end := e2e.Settle(baseG+slack, func() int { return p.Goroutines(t) })
	t.Logf("producer gone %s after the reload; heap %d -> %d MB; goroutines %d, %d with the stalled connection, %d after it closed",
		gone.Round(time.Millisecond), baseHeap>>20, heap>>20, baseG, withStall, end)
	if withStall > baseG+stalledConn+slack {
		body, _ := p.PProfPage("goroutine?debug=1")
		t.Errorf("goroutines %d with the stalled connection open after the reload, baseline %d\n%s", withStall, baseG, body)
	}
	if end > baseG+slack {
		body, _ := p.PProfPage("goroutine?debug=1")
		t.Errorf("goroutines %d after the stalled connection closed, baseline %d\n%s", end, baseG, body)
	}
}

// TestAShutdownEndsATransferWhoseSecondaryStoppedReading: SIGTERM with a stalled AXFR ends the
// producer at once and the process within CoreDNS's grace period for open connections (5 s).
func TestAShutdownEndsATransferWhoseSecondaryStoppedReading(t *testing.T) {
	p, _, _, _, _ := stalledTransferServer(t)
	took := p.Sigterm(t, 8*time.Second) // with a stalled transfer
	t.Logf("exited %s after SIGTERM", took.Round(time.Millisecond))
	if strings.Contains(p.Output(), "Zone transfers did not end") {
		t.Errorf("the stop waited for the transfer:\n%s", p.Output())
	}
}
