package main

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// soaServer answers the zone's SOA with the serial it holds, on a loopback UDP port.
func soaServer(t *testing.T, serial *atomic.Uint32) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Answer = []dns.RR{&dns.SOA{Hdr: dns.RR_Header{Name: dns.Fqdn(zone), Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 300},
			Ns: "ns.dns." + dns.Fqdn(zone), Mbox: "hostmaster." + dns.Fqdn(zone), Serial: serial.Load()}}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

func TestWatchLagMeasuresHowLongASecondaryIsBehind(t *testing.T) {
	var p, fast, stuck atomic.Uint32
	p.Store(10)
	fast.Store(10)
	stuck.Store(10)
	secs := []*secondaryProc{{kind: "fast", DNS: soaServer(t, &fast)}, {kind: "stuck", DNS: soaServer(t, &stuck)}}
	primary := soaServer(t, &p)
	churned := make(chan struct{})
	type result struct {
		lags []*secLag
		err  error
	}
	done := make(chan result, 1)
	go func() {
		lags, err := watchLag(primary, secs, churned, 700*time.Millisecond)
		done <- result{lags, err}
	}()
	time.Sleep(300 * time.Millisecond)
	p.Store(11) // both behind from here
	time.Sleep(600 * time.Millisecond)
	fast.Store(11) // the fast one follows after about 0.6 s; the stuck one never
	time.Sleep(300 * time.Millisecond)
	close(churned)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	f, s := r.lags[0], r.lags[1]
	if f.lag.max < 0.3 || f.lag.max > 0.9 || f.churning != f.lag.max {
		t.Errorf("fast: worst lag %.2fs (while churning %.2fs), want about 0.6s", f.lag.max, f.churning)
	}
	if f.caughtUp < 0 || f.caughtUp > 300*time.Millisecond || f.serials != 2 {
		t.Errorf("fast: caught up %v after the end, %d serials; want at the first poll, 2", f.caughtUp, f.serials)
	}
	// The stuck one is behind from the change until the watch gives up, 0.7 s after the end.
	if s.caughtUp >= 0 || s.lag.max < 1.2 || s.churning > s.lag.max || s.serials != 1 {
		t.Errorf("stuck: caught up %v, worst lag %.2fs (while churning %.2fs), %d serials; want never, >= 1.2s, 1",
			s.caughtUp, s.lag.max, s.churning, s.serials)
	}
	if f.missed+s.missed != 0 || f.polls == 0 || f.polls != s.polls {
		t.Errorf("polls %d and %d, unanswered %d and %d", f.polls, s.polls, f.missed, s.missed)
	}
}
