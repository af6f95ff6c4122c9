package steer

import (
	"context"
	"net/netip"

	"github.com/miekg/dns"
)

// Subnet is the EDNS Client Subnet option of a question (RFC 7871) as its reply carries it
// back: FAMILY, SOURCE PREFIX-LENGTH and ADDRESS as asked, and a SCOPE PREFIX-LENGTH that says
// how much of the address the answer depended on (7.2.1). That is 0, "any client", unless the
// answer was chosen by where the client is placed (Placed): then Locality.Scope.
type Subnet struct {
	opt    dns.EDNS0_SUBNET
	placed bool
}

// SubnetOf is the EDNS Client Subnet option of m (the first, as ClientSubnet reads it); nil
// when m has none. malformed reports one that RFC 7871 has answered with FORMERR: a SCOPE
// PREFIX-LENGTH other than 0 (section 6: it MUST be 0 in queries; BIND refuses it too) or
// ADDRESS bits set beyond SOURCE PREFIX-LENGTH (section 6). An unknown FAMILY, a prefix longer
// than the family's addresses, or FAMILY 0 with a prefix do not unpack: the DNS server answers
// those FORMERR before any plugin sees them. Too many or too few ADDRESS octets that are zero
// cannot be told once unpacked, and are taken as the prefix says.
func SubnetOf(m *dns.Msg) (s *Subnet, malformed bool) {
	ecs := subnetOption(m)
	if ecs == nil {
		return nil, false
	}
	s = &Subnet{opt: *ecs}
	if ecs.SourceScope != 0 {
		return s, true
	}
	if a, ok := netip.AddrFromSlice(ecs.Address); ok && ecs.Family != 0 {
		if ecs.Family == 1 {
			a = a.Unmap() // unpacked as 16 bytes
		}
		if p, err := a.Prefix(int(ecs.SourceNetmask)); err != nil || p.Addr() != a {
			return s, true
		}
	}
	return s, false
}

// Placed notes that the answer is chosen by where the client is placed; on nil it does
// nothing (a question without the option).
func (s *Subnet) Placed() {
	if s != nil {
		s.placed = true
	}
}

type subnetKey struct{}

// WithSubnet is ctx carrying the question's option s, for the lookups that choose by place to
// note it (Placed).
func WithSubnet(ctx context.Context, s *Subnet) context.Context {
	return context.WithValue(ctx, subnetKey{}, s)
}

// SubnetFrom is the option ctx carries; nil when none (a question without it).
func SubnetFrom(ctx context.Context) *Subnet {
	s, _ := ctx.Value(subnetKey{}).(*Subnet)
	return s
}

// Reply is the option the reply carries, with the scope of the answer: where it was chosen by
// the place of the option's address, how much of the address l places the client by
// (Locality.Scope); else 0, also where the option says nothing (a source prefix of 0: the
// answer is the asking server's own, for any client it asks for, RFC 7871 7.1.2).
func (s *Subnet) Reply(l *Locality) *dns.EDNS0_SUBNET {
	o := s.opt
	o.SourceScope = 0
	if a, bits, ok := clientOf(&o); ok && s.placed {
		o.SourceScope = uint8(l.Scope(a, bits)) // #nosec G115 -- at most 128
	}
	return &o
}

// ClientSubnet is the EDNS Client Subnet option of a question (RFC 7871), when it has one
// that says something: its address and source prefix length. A source prefix length of 0
// asks that the client's address not be used.
func ClientSubnet(m *dns.Msg) (addr netip.Addr, bits int, ok bool) {
	ecs := subnetOption(m)
	if ecs == nil {
		return netip.Addr{}, 0, false
	}
	return clientOf(ecs)
}

// clientOf is ClientSubnet's reading of the option ecs.
func clientOf(ecs *dns.EDNS0_SUBNET) (addr netip.Addr, bits int, ok bool) {
	if ecs.SourceNetmask == 0 {
		return netip.Addr{}, 0, false
	}
	a, valid := netip.AddrFromSlice(ecs.Address)
	if !valid {
		return netip.Addr{}, 0, false
	}
	a = a.Unmap()
	if ecs.Family == 1 && !a.Is4() || ecs.Family == 2 && !a.Is6() || int(ecs.SourceNetmask) > a.BitLen() {
		return netip.Addr{}, 0, false
	}
	return a, int(ecs.SourceNetmask), true
}

// subnetOption is the first EDNS Client Subnet option of m: the one a reply echoes, and the
// one that places the client.
func subnetOption(m *dns.Msg) *dns.EDNS0_SUBNET {
	opt := m.IsEdns0()
	if opt == nil {
		return nil
	}
	for _, o := range opt.Option {
		if ecs, ok := o.(*dns.EDNS0_SUBNET); ok {
			return ecs
		}
	}
	return nil
}
