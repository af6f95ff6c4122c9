package steer

import (
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"github.com/miekg/dns"
)

func TestScopeIsThePrefixEveryAddressOfWhichIsPlacedAlike(t *testing.T) {
	l, err := locality(t,
		"locality-cluster eu1 10.1.0.0/16 fd00:1::/48",
		"locality-cluster eu2 10.2.0.0/16 10.1.200.0/24",
		"locality-region eu eu1 eu2",
		"locality-cluster us1 10.3.0.0/16",
		"locality-region-networks eu 192.0.2.0/24 10.0.0.0/8",
		"locality-cluster ap1 203.0.113.7")
	if err != nil {
		t.Fatal(err)
	}
	v4only, err := locality(t, "locality-cluster us1 10.3.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		behaviour string
		l         *Locality
		addr      string
		source    int
		want      int
	}{
		{"placed by a network with none inside it: that network's prefix", l, "10.3.7.0", 24, 16},
		{"placed by a network with a longer one inside: the part of it that holds none of that", l, "10.1.7.0", 24, 17},
		{"placed in the longer network inside another: its prefix", l, "10.1.200.0", 24, 24},
		{"the source prefix bounds it: a /16 says nothing of the /24 in it", l, "10.1.0.0", 16, 16},
		{"the rest of a region's wide network: the part that holds no cluster's", l, "10.9.9.0", 24, 13},
		{"placed nowhere: the widest prefix that holds no mapped network", l, "198.51.100.0", 24, 6},
		{"placed nowhere, a network longer than the source inside it: the source prefix", l, "192.0.0.0", 16, 16},
		{"one mapped address: all of it", l, "203.0.113.7", 32, 32},
		{"IPv6", l, "fd00:1:0:ab00::", 56, 48},
		{"IPv6 placed nowhere", l, "2001:db8::", 56, 1},
		{"no network of the family: any client of it", v4only, "2001:db8::", 56, 0},
		{"a source prefix of 0: any client", l, "0.0.0.0", 0, 0},
		{"no locality: any client", nil, "10.1.7.0", 24, 0},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			if got := tc.l.Scope(netip.MustParseAddr(tc.addr), tc.source); got != tc.want {
				t.Fatalf("Scope(%s/%d) = %d, want %d", tc.addr, tc.source, got, tc.want)
			}
		})
	}
}

// TestScopeIsTheShortestPrefixNoNetworkCuts checks Scope against its definition, written with
// netip.Prefix rather than bits: the shortest prefix of the client's address that every mapped
// network either holds whole or does not touch, bounded by the source prefix; and that the
// client's source prefix is then placed as every other source prefix in the scope.
func TestScopeIsTheShortestPrefixNoNetworkCuts(t *testing.T) {
	nets := []string{"10.1.0.0/16", "10.1.200.0/24", "10.1.201.5/32", "10.0.0.0/8", "192.0.2.0/24", "172.16.0.0/12"}
	l, err := locality(t,
		"locality-cluster eu1 10.1.0.0/16",
		"locality-cluster eu2 10.1.200.0/24 10.1.201.5",
		"locality-region-networks eu 10.0.0.0/8 192.0.2.0/24",
		"locality-cluster us1 172.16.0.0/12")
	if err != nil {
		t.Fatal(err)
	}
	cut := func(p netip.Prefix) bool {
		for _, n := range nets {
			n := netip.MustParsePrefix(n)
			if p.Overlaps(n) && !(n.Bits() <= p.Bits() && n.Contains(p.Addr())) {
				return true
			}
		}
		return false
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		// Addresses near the networks, where the cuts are, and anywhere.
		a := addr4(rnd.Uint32())
		if rnd.IntN(2) == 0 {
			n := netip.MustParsePrefix(nets[rnd.IntN(len(nets))])
			a = addr4(ip4(n.Addr()) ^ rnd.Uint32()>>rnd.IntN(33))
		}
		source := rnd.IntN(33)
		x := netip.PrefixFrom(a, source).Masked()
		want := 0
		for want < 32 && cut(netip.PrefixFrom(x.Addr(), want).Masked()) {
			want++
		}
		want = min(want, source)
		got := l.Scope(x.Addr(), source)
		if got != want {
			t.Fatalf("Scope(%s) = %d, want %d", x, got, want)
		}
		// Another source prefix within the scope is placed alike.
		other := netip.PrefixFrom(addr4(ip4(x.Addr())|rnd.Uint32()>>got), source).Masked()
		if got < 32 && l.Client(other.Addr(), source) != l.Client(x.Addr(), source) {
			t.Fatalf("Scope(%s) = %d, but %s is placed %+v, not %+v", x, got, other, l.Client(other.Addr(), source), l.Client(x.Addr(), source))
		}
	}
}

func ip4(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func addr4(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func TestSubnetEchoesTheQuestionsOptionWithTheAnswersScope(t *testing.T) {
	l, err := locality(t, "locality-cluster eu1 10.1.0.0/16", "locality-cluster us1 fd00:2::/48")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		behaviour string
		ecs       dns.EDNS0_SUBNET
		placed    bool
		scope     uint8
	}{
		{"an answer chosen by place: how much of the address placed it", ecs(1, "10.1.7.0", 24), true, 16},
		{"an answer that is not: any client", ecs(1, "10.1.7.0", 24), false, 0},
		{"IPv6 chosen by place", ecs(2, "fd00:2:0:100::", 56), true, 48},
		{"a source prefix of 0: placed by the asking server, for any of its clients", ecs(1, "0.0.0.0", 0), true, 0},
		{"FAMILY 0 with prefix 0 (dig +subnet=0)", ecs(0, "0.0.0.0", 0), true, 0},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			s, malformed := SubnetOf(withECS(&tc.ecs))
			if s == nil || malformed {
				t.Fatalf("SubnetOf = %v, malformed %v", s, malformed)
			}
			if tc.placed {
				s.Placed()
			}
			got := s.Reply(l)
			if got.Family != tc.ecs.Family || got.SourceNetmask != tc.ecs.SourceNetmask || !got.Address.Equal(tc.ecs.Address) || got.SourceScope != tc.scope {
				t.Fatalf("reply option %s (family %d), want %s with scope %d", got, got.Family, &tc.ecs, tc.scope)
			}
			// What goes on the wire: the question's option, but the scope.
			if _, err := (&dns.Msg{Extra: []dns.RR{&dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}, Option: []dns.EDNS0{got}}}}).Pack(); err != nil {
				t.Fatalf("the reply's option does not pack: %v", err)
			}
		})
	}
	var none *Subnet
	none.Placed() // a question without the option: nothing to note
}

func TestSubnetOfRefusesMalformedOptions(t *testing.T) {
	withScope := ecs(1, "10.1.7.0", 24)
	withScope.SourceScope = 24
	for _, tc := range []struct {
		behaviour string
		m         *dns.Msg
		none      bool
		malformed bool
	}{
		{"no EDNS", new(dns.Msg), true, false},
		{"EDNS without the option", func() *dns.Msg { m := new(dns.Msg); m.SetEdns0(1232, false); return m }(), true, false},
		{"a well-formed option", withECS(ptr(ecs(1, "10.1.7.0", 24))), false, false},
		{"a scope in the question (RFC 7871 6: it MUST be 0)", withECS(&withScope), false, true},
		{"address bits beyond the source prefix", withECS(ptr(ecs(1, "10.1.7.9", 24))), false, true},
		{"IPv6 address bits beyond the source prefix", withECS(ptr(ecs(2, "fd00:2::1", 56))), false, true},
		{"source prefix 0 with an address", withECS(ptr(ecs(1, "10.1.7.0", 0))), false, true},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			s, malformed := SubnetOf(tc.m)
			if (s == nil) != tc.none || malformed != tc.malformed {
				t.Fatalf("SubnetOf = %v, malformed %v; want none %v, malformed %v", s, malformed, tc.none, tc.malformed)
			}
		})
	}
}

func ecs(family uint16, addr string, source uint8) dns.EDNS0_SUBNET {
	a := net.ParseIP(addr)
	if family == 1 {
		a = a.To4()
	}
	return dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: family, SourceNetmask: source, Address: a}
}

func ptr[T any](v T) *T { return &v }

func withECS(o *dns.EDNS0_SUBNET) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion("app.example.com.", dns.TypeA)
	m.SetEdns0(1232, false)
	m.IsEdns0().Option = append(m.IsEdns0().Option, o)
	return m
}
