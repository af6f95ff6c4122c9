package steer

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// locality reads option lines ("locality-cluster eu1 10.1.0.0/16") and builds the Locality.
func locality(t *testing.T, lines ...string) (*Locality, error) {
	t.Helper()
	var c LocalityConfig
	for _, l := range lines {
		f := strings.Fields(l)
		known, err := Options.Parse(&c, f[0], f[1:])
		if !known {
			t.Fatalf("option %s unknown", f[0])
		}
		if err != nil {
			return nil, err
		}
	}
	return c.Build()
}

func TestLocalityPlacesClients(t *testing.T) {
	l, err := locality(t,
		"locality-cluster eu1 10.1.0.0/16 fd00:1::/48",
		"locality-cluster eu2 10.2.0.0/16 10.1.200.0/24",
		"locality-region eu eu1 eu2",
		"locality-region us us1",
		"locality-cluster us1 10.3.0.0/16",
		"locality-region-networks eu 192.0.2.0/24 10.0.0.0/8",
		"locality-cluster ap1 203.0.113.7")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		behaviour string
		addr      string
		bits      int
		want      Client
	}{
		{"a client in a cluster's network is in that cluster and its region", "10.1.2.3", -1, Client{Owner: "eu1", Region: "eu"}},
		{"the longest network wins", "10.1.200.9", -1, Client{Owner: "eu2", Region: "eu"}},
		{"a region's network places a client in the region only", "192.0.2.77", -1, Client{Region: "eu"}},
		{"a cluster network inside a region network wins", "10.3.0.1", -1, Client{Owner: "us1", Region: "us"}},
		{"the rest of a region's wide network", "10.9.9.9", -1, Client{Region: "eu"}},
		{"an owner without a region", "203.0.113.7", -1, Client{Owner: "ap1"}},
		{"IPv6", "fd00:1::53", -1, Client{Owner: "eu1", Region: "eu"}},
		{"an IPv4-mapped IPv6 address is IPv4", "::ffff:10.1.2.3", -1, Client{Owner: "eu1", Region: "eu"}},
		{"an unknown network: nowhere", "198.51.100.1", -1, Client{}},
		{"client subnet /24 inside a cluster's /16", "10.1.7.0", 24, Client{Owner: "eu1", Region: "eu"}},
		{"client subnet /16 says nothing of the /24 in it", "10.1.200.0", 16, Client{Owner: "eu1", Region: "eu"}},
		{"client subnet /12 is wider than every cluster's network", "10.0.0.0", 12, Client{Region: "eu"}},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			if got := l.Client(netip.MustParseAddr(tc.addr), tc.bits); got != tc.want {
				t.Fatalf("Client(%s/%d) = %+v, want %+v", tc.addr, tc.bits, got, tc.want)
			}
		})
	}
	if l.RegionOf("eu2") != "eu" || l.RegionOf("ap1") != "" || !l.Configured() {
		t.Errorf("RegionOf eu2 %q, ap1 %q", l.RegionOf("eu2"), l.RegionOf("ap1"))
	}
	var none *Locality
	if none.Configured() || none.Client(netip.MustParseAddr("10.1.2.3"), -1) != (Client{}) || none.RegionOf("eu1") != "" {
		t.Error("a nil Locality places someone")
	}
	if n := testing.AllocsPerRun(1000, func() { _ = l.Client(netip.MustParseAddr("10.1.200.9"), 24) }); n != 0 {
		t.Errorf("%v allocations per client", n)
	}
}

func TestLocalityCatchAll(t *testing.T) {
	l, err := locality(t, "locality-region-networks world 0.0.0.0/0 ::/0", "locality-cluster eu1 10.1.0.0/16 fd00:1::/64")
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]Client{
		"198.51.100.1": {Region: "world"}, "2001:db8::1": {Region: "world"},
		"10.1.0.1": {Owner: "eu1"}, "fd00:1::1": {Owner: "eu1"}, "fd00:1:0:1::1": {Region: "world"},
	} {
		if got := l.Client(netip.MustParseAddr(addr), -1); got != want {
			t.Errorf("Client(%s) = %+v, want %+v", addr, got, want)
		}
	}
}

func TestLocalityOptionsRefuseMistakes(t *testing.T) {
	for _, tc := range []struct {
		behaviour string
		lines     []string
		err       string
	}{
		{"a network mapped twice", []string{"locality-cluster eu1 10.1.0.0/16", "locality-cluster eu2 10.1.0.0/16"},
			"locality-cluster: network 10.1.0.0/16 is mapped twice (cluster eu1 and cluster eu2)"},
		{"the same network written otherwise", []string{"locality-cluster eu1 10.1.0.0/16", "locality-region-networks eu 10.1.9.9/16"},
			"network 10.1.0.0/16 is mapped twice"},
		{"an owner in two regions", []string{"locality-region eu eu1", "locality-region us eu1"}, "owner eu1 is in regions eu and us"},
		{"not a network", []string{"locality-cluster eu1 10.1.0.0/33"}, `"10.1.0.0/33" is neither a network`},
		{"a name alone", []string{"locality-cluster eu1"}, "locality-cluster needs a name and at least one more argument"},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			_, err := locality(t, tc.lines...)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v, want one saying %q", err, tc.err)
			}
		})
	}
}

func TestClientSubnet(t *testing.T) {
	msg := func(family uint16, addr string, bits uint8) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion("app.example.com.", dns.TypeA)
		m.SetEdns0(1232, false)
		m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: family, SourceNetmask: bits, Address: net.ParseIP(addr)})
		return m
	}
	for _, tc := range []struct {
		behaviour string
		m         *dns.Msg
		addr      string
		bits      int
		ok        bool
	}{
		{"IPv4 /24", msg(1, "10.1.7.0", 24), "10.1.7.0", 24, true},
		{"IPv6 /56", msg(2, "fd00:1::", 56), "fd00:1::", 56, true},
		{"source prefix 0: the client asks not to be placed", msg(1, "10.1.7.0", 0), "", 0, false},
		{"a family that does not match the address", msg(2, "10.1.7.0", 24), "", 0, false},
		{"a prefix longer than the address", msg(1, "10.1.7.0", 40), "", 0, false},
		{"no EDNS", func() *dns.Msg { m := new(dns.Msg); m.SetQuestion("a.", dns.TypeA); return m }(), "", 0, false},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			a, bits, ok := ClientSubnet(tc.m)
			if ok != tc.ok || ok && (a != netip.MustParseAddr(tc.addr) || bits != tc.bits) {
				t.Fatalf("ClientSubnet = %s/%d %v, want %s/%d %v", a, bits, ok, tc.addr, tc.bits, tc.ok)
			}
		})
	}
}
