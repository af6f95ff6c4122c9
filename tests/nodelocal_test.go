package tests

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// fakeResolver is a DNS server on loopback (UDP and TCP, one port) that answers every A
// question with its own address ip and counts the questions it got per name, so a test can tell
// which server a node cache asked and whether it asked at all.
type fakeResolver struct {
	Addr string
	ip   string
	mu   sync.Mutex
	seen map[string]int
}

func startFakeResolver(t *testing.T, ip string) *fakeResolver {
	t.Helper()
	f := &fakeResolver{ip: ip, seen: map[string]int{}}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	udp, err := net.ListenPacket("udp", tcp.Addr().String())
	if err != nil {
		tcp.Close()
		t.Fatal(err)
	}
	f.Addr = tcp.Addr().String()
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		f.mu.Lock()
		f.seen[strings.ToLower(q.Name)]++
		f.mu.Unlock()
		if q.Qtype == dns.TypeA {
			rr, _ := dns.NewRR(q.Name + " 60 IN A " + f.ip)
			m.Answer = append(m.Answer, rr)
		}
		_ = w.WriteMsg(m)
	})
	servers := []*dns.Server{{Listener: tcp, Handler: h}, {PacketConn: udp, Handler: h}}
	for _, s := range servers {
		go func() { _ = s.ActivateAndServe() }()
	}
	t.Cleanup(func() {
		for _, s := range servers {
			_ = s.Shutdown()
		}
	})
	return f
}

func (f *fakeResolver) asked(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[name]
}

// TestNodeLocalCorefile runs corefile.d/nodelocal.Corefile on the built binary in front of
// three stand-in servers: the landscape zone goes to the central server, cluster.local (and the
// reverse zones) to the cluster DNS, every other name upstream; each name asked once of the
// server that owns it, however often the pods ask.
func TestNodeLocalCorefile(t *testing.T) {
	central := startFakeResolver(t, "198.51.100.1")
	cluster := startFakeResolver(t, "198.51.100.2")
	upstream := startFakeResolver(t, "198.51.100.3")
	p := runCorefile(t, "nodelocal.Corefile",
		"NODELOCAL_CENTRAL="+central.Addr,
		"NODELOCAL_CLUSTER_DNS="+cluster.Addr,
		"NODELOCAL_UPSTREAM="+upstream.Addr)
	p.waitReady(t, 30*time.Second)

	cases := []struct {
		name  string
		owner *fakeResolver
		ip    string
	}{
		{"shop.eu1.openmcp.cluster.", central, central.ip},
		{"web.shop.svc.cluster.local.", cluster, cluster.ip},
		{"example.org.", upstream, upstream.ip},
	}
	all := []*fakeResolver{central, cluster, upstream}
	for _, c := range cases {
		waitFor(t, 10*time.Second, p.DNS, c.name, dns.TypeA, hasAnswer)
		for _, netw := range []string{"udp", "tcp", "udp"} {
			if r := ask(t, netw, p.DNS, c.name, dns.TypeA); !answersWith(c.ip)(r) {
				t.Errorf("%s: A %s: want %s, got %v", netw, c.name, c.ip, r)
			}
		}
		for _, f := range all {
			want := 0
			if f == c.owner {
				want = 1 // the rest came from the cache
			}
			if got := f.asked(c.name); got != want {
				t.Errorf("%s was asked %d times of the server at %s (%s), want %d", c.name, got, f.Addr, f.ip, want)
			}
		}
	}
	// A reverse lookup is the cluster DNS's (Service and pod addresses).
	if r := ask(t, "udp", p.DNS, "10.0.96.10.in-addr.arpa.", dns.TypePTR); r.Rcode != dns.RcodeSuccess {
		t.Errorf("PTR: %v", r)
	}
	if cluster.asked("10.0.96.10.in-addr.arpa.") != 1 || upstream.asked("10.0.96.10.in-addr.arpa.") != 0 {
		t.Errorf("the reverse zone should go to the cluster DNS only: cluster %d, upstream %d",
			cluster.asked("10.0.96.10.in-addr.arpa."), upstream.asked("10.0.96.10.in-addr.arpa."))
	}
}
