package steer

import (
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/cpuuse"
)

// BenchmarkChoose is the selection alone, for a name of three owners of two addresses each.
func BenchmarkChoose(b *testing.B) {
	for _, bc := range []struct {
		name   string
		owners []Owner
		client Client
	}{
		{"weighted", []Owner{owner("eu1", "eu", 2, 0, "w90 check"), owner("us1", "us", 2, 0, "w10 check"), owner("ap1", "ap", 2, 0, "w10 p1")}, Client{}},
		{"tiers", []Owner{owner("eu1", "eu", 2, 1, "p0 check"), owner("us1", "us", 2, 0, "p1"), owner("ap1", "ap", 2, 0, "p2")}, Client{}},
		{"local", []Owner{owner("eu1", "eu", 2, 0, "w90"), owner("us1", "us", 2, 0, "w10"), owner("ap1", "ap", 2, 0, "w10")}, Client{Owner: "us1", Region: "us"}},
		{"region", []Owner{owner("eu1", "eu", 2, 0, "w90"), owner("eu2", "eu", 2, 0, "w10"), owner("us1", "us", 2, 0, "w10")}, Client{Owner: "eu9", Region: "eu"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var buf [8]int
			name := Prepare(bc.owners)
			b.ReportAllocs()
			defer cpuuse.PerOp(b)()
			for b.Loop() {
				_ = name.Choose(bc.client, rand.Uint64(), buf[:0])
			}
		})
	}
}

// BenchmarkLocalityClient places a client among 20 networks of 4 lengths.
func BenchmarkLocalityClient(b *testing.B) {
	var c LocalityConfig
	for _, l := range [][]string{
		{"locality-cluster", "eu1", "10.1.0.0/16", "10.11.0.0/16", "10.21.128.0/17"},
		{"locality-cluster", "eu2", "10.2.0.0/16", "10.12.0.0/16", "10.1.200.0/24"},
		{"locality-cluster", "us1", "10.3.0.0/16", "10.13.0.0/16", "fd00:3::/48"},
		{"locality-region", "eu", "eu1", "eu2"},
		{"locality-region-networks", "eu", "192.0.2.0/24", "172.16.0.0/12", "198.51.100.0/24"},
	} {
		if _, err := Options.Parse(&c, l[0], l[1:]); err != nil {
			b.Fatal(err)
		}
	}
	l, err := c.Build()
	if err != nil {
		b.Fatal(err)
	}
	addr := netip.MustParseAddr("10.1.200.9")
	b.ReportAllocs()
	defer cpuuse.PerOp(b)()
	for b.Loop() {
		_ = l.Client(addr, -1)
	}
}

// BenchmarkAnswer is what a name's A answer costs as the handler makes it, the reply built and
// packed (what dominates an answer besides the network): plain is a name of three owners of
// two addresses each without policy (every address); steered is the same name with weights
// 90/10/10 and a client placed by a Locality, one owner's two addresses answered; tier is
// steered with one tier holding every owner, so that both answer the same six addresses.
// steered and tier over plain is what steering adds to an answer.
func BenchmarkAnswer(b *testing.B) {
	rrs := make([][]dns.RR, 3)
	for o := range rrs {
		for a := range 2 {
			rrs[o] = append(rrs[o], &dns.A{Hdr: dns.RR_Header{Name: "app.openmcp.cluster.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
				A: net.IPv4(203, 0, 113, byte(10*o+a))})
		}
	}
	var c LocalityConfig
	_, _ = Options.Parse(&c, "locality-region-networks", []string{"eu", "192.0.2.0/24"})
	loc, _ := c.Build()
	client := netip.MustParseAddr("198.51.100.7") // placed nowhere: the weights decide
	q := new(dns.Msg)
	q.SetQuestion("app.openmcp.cluster.", dns.TypeA)
	weighted := []Owner{owner("eu1", "eu", 2, 0, "w90 check"), owner("us1", "us", 2, 0, "w10 check"), owner("ap1", "ap", 2, 0, "w10")}
	union := []Owner{owner("eu1", "eu", 2, 0, "p0 check"), owner("us1", "us", 2, 0, "check"), owner("ap1", "ap", 2, 0, "")}

	answer := func(b *testing.B, name *Name) {
		var out [512]byte
		var chosen [8]int
		reply := new(dns.Msg)
		answers := make([]dns.RR, 0, 8)
		b.ReportAllocs()
		defer cpuuse.PerOp(b)()
		for b.Loop() {
			answers = answers[:0]
			if name == nil {
				for _, o := range rrs {
					answers = append(answers, o...)
				}
			} else {
				res := name.Choose(loc.Client(client, -1), rand.Uint64(), chosen[:0])
				for _, i := range res.Owners {
					answers = append(answers, rrs[i]...) // no address held down here
				}
			}
			reply.SetReply(q)
			reply.Authoritative = true
			reply.Answer = answers
			if _, err := reply.PackBuffer(out[:]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("plain", func(b *testing.B) { answer(b, nil) })
	b.Run("steered", func(b *testing.B) { answer(b, Prepare(weighted)) })
	b.Run("tier", func(b *testing.B) { answer(b, Prepare(union)) })
}
