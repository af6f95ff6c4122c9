package steer

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"slices"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/option"
)

// Locality places a client by the network it asks from: in an owner's cluster (and that
// owner's region), or in a region. The serve role reads it from the stanza (Options) and asks
// it once per question; the longest network that holds the client decides. Its zero value
// places no one.
type Locality struct {
	regions map[string]string // owner -> region
	// byLen are the networks of one family by prefix length, longest first.
	v4, v6 []byLength
	// nets4, nets6 are every network of one family, for Scope.
	nets4, nets6 []mapped
}

// mapped is one mapped network, keyed as byLength keys it.
type mapped struct {
	key  [2]uint64
	bits int
}

// byLength are the networks of one family and prefix length, keyed by their address as a
// number (IPv4 in the low 32 bits of hi): two words hash faster than a netip.Prefix.
type byLength struct {
	bits  int
	where map[[2]uint64]Client
}

// key is the first bits bits of addr, as byLength keys them.
func key(addr netip.Addr, bits int) [2]uint64 {
	if addr.Is4() {
		a := addr.As4()
		v := uint64(binary.BigEndian.Uint32(a[:]))
		return [2]uint64{v &^ (1<<(32-bits) - 1)}
	}
	a := addr.As16()
	hi, lo := binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
	switch {
	case bits <= 64:
		return [2]uint64{hi &^ lowBits(64-bits), 0}
	default:
		return [2]uint64{hi, lo &^ lowBits(128-bits)}
	}
}

// lowBits is a word of the n lowest bits set (n in 0..64).
func lowBits(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<n - 1
}

// Configured reports whether any network is mapped: without one, Client places no one.
func (l *Locality) Configured() bool { return l != nil && len(l.v4)+len(l.v6) > 0 }

// RegionOf is the region of an owner; "" when none is set.
func (l *Locality) RegionOf(owner string) string {
	if l == nil {
		return ""
	}
	return l.regions[owner]
}

// Client places a client asking from addr. With EDNS Client Subnet, addr is the option's
// address and bits its source prefix length: only networks no longer than that can hold the
// client (a /24 says nothing of the /28 in it). Without it bits is -1 (or the address's
// length). It allocates nothing.
func (l *Locality) Client(addr netip.Addr, bits int) Client {
	if l == nil {
		return Client{}
	}
	addr, bits = asked(addr, bits)
	tables := l.v6
	if addr.Is4() {
		tables = l.v4
	}
	for _, t := range tables {
		if t.bits > bits {
			continue
		}
		if c, ok := t.where[key(addr, t.bits)]; ok {
			return c
		}
	}
	return Client{}
}

// Scope is how much of a client's address its place depends on, for the SCOPE PREFIX-LENGTH
// of an answer chosen by it (RFC 7871 7.2.1): the shortest prefix of addr that every mapped
// network either holds whole or does not touch, so that every address in it is placed as addr
// is. That is the longest of the prefixes of the networks that hold addr and, for every other
// network, one bit more than addr shares with it. It is bounded by the source prefix: Client
// reads no network longer than that, and the answer says nothing of addresses beyond it. A
// client placed nowhere gets the prefix that holds no mapped network (the rest of the address
// space deaggregated, as RFC 7871 7.2.1 allows): a /1 for 192.0.2.0/24 when only 10.0.0.0/8 is
// mapped; 0 when no network of its family is. Linear in the networks: it is asked once per
// question with the option and an answer chosen by place, never on the plain path.
func (l *Locality) Scope(addr netip.Addr, source int) int {
	if l == nil {
		return 0
	}
	addr, source = asked(addr, source)
	nets := l.nets6
	if addr.Is4() {
		nets = l.nets4
	}
	x, scope := key(addr, addr.BitLen()), 0
	for _, n := range nets {
		need := n.bits // n holds addr (or would, were it no longer than the source prefix)
		if common := commonBits(x, n.key, addr.Is4()); common < n.bits {
			need = common + 1 // n does not: the prefix one bit longer than they share misses it
		}
		scope = max(scope, need)
	}
	return min(scope, source)
}

// asked is addr as Client and Scope read it (an IPv4-mapped address as IPv4), and bits its
// prefix length, bounded by its length (-1: all of it).
func asked(addr netip.Addr, bits int) (netip.Addr, int) {
	addr = addr.Unmap()
	if bits < 0 || bits > addr.BitLen() {
		bits = addr.BitLen()
	}
	return addr, bits
}

// commonBits is how many leading bits two keys share (IPv4 keys: of 32).
func commonBits(a, b [2]uint64, v4 bool) int {
	if v4 {
		return bits.LeadingZeros32(uint32(a[0] ^ b[0]))
	}
	if d := a[0] ^ b[0]; d != 0 {
		return bits.LeadingZeros64(d)
	}
	return 64 + bits.LeadingZeros64(a[1]^b[1])
}

// LocalityConfig is what the locality options say, to be built with Build.
type LocalityConfig struct {
	clusters []mapping // owner -> networks
	regions  []mapping // region -> owners
	nets     []mapping // region -> networks
}

type mapping struct {
	name   string
	values []string
}

// Options are the locality options of a stanza, for the serve role to hook in:
//
//	locality-cluster <owner> <network>...          clients of these networks are in owner's cluster
//	locality-region <region> <owner>...             these owners' clusters are in region
//	locality-region-networks <region> <network>...  clients of these networks are in region
//
// A network is a CIDR prefix or one address.
var Options = option.Table[*LocalityConfig]{
	"locality-cluster":         pairs(func(c *LocalityConfig, m mapping) { c.clusters = append(c.clusters, m) }),
	"locality-region":          pairs(func(c *LocalityConfig, m mapping) { c.regions = append(c.regions, m) }),
	"locality-region-networks": pairs(func(c *LocalityConfig, m mapping) { c.nets = append(c.nets, m) }),
}

func pairs(add func(*LocalityConfig, mapping)) option.Func[*LocalityConfig] {
	return func(c *LocalityConfig, opt string, args []string) error {
		if len(args) < 2 {
			return fmt.Errorf("%s needs a name and at least one more argument", opt)
		}
		add(c, mapping{name: args[0], values: args[1:]})
		return nil
	}
}

// Build checks the options and makes the Locality: each network must parse and be mapped once,
// an owner be in one region. A cluster's clients are in its owner's region.
func (c *LocalityConfig) Build() (*Locality, error) {
	l := &Locality{regions: map[string]string{}}
	for _, m := range c.regions {
		for _, owner := range m.values {
			if r, dup := l.regions[owner]; dup && r != m.name {
				return nil, fmt.Errorf("locality-region: owner %s is in regions %s and %s", owner, r, m.name)
			}
			l.regions[owner] = m.name
		}
	}
	seen := map[netip.Prefix]string{}
	add := func(opt, v string, where Client, what string) error {
		p, err := network(v)
		if err != nil {
			return fmt.Errorf("%s: %w", opt, err)
		}
		if prev, dup := seen[p]; dup {
			return fmt.Errorf("%s: network %s is mapped twice (%s and %s)", opt, p, prev, what)
		}
		seen[p] = what
		tables, nets := &l.v6, &l.nets6
		if p.Addr().Is4() {
			tables, nets = &l.v4, &l.nets4
		}
		*nets = append(*nets, mapped{key: key(p.Addr(), p.Bits()), bits: p.Bits()})
		i := slices.IndexFunc(*tables, func(t byLength) bool { return t.bits == p.Bits() })
		if i < 0 {
			*tables = append(*tables, byLength{bits: p.Bits(), where: map[[2]uint64]Client{}})
			i = len(*tables) - 1
		}
		(*tables)[i].where[key(p.Addr(), p.Bits())] = where
		return nil
	}
	for _, m := range c.clusters {
		for _, v := range m.values {
			if err := add("locality-cluster", v, Client{Owner: m.name, Region: l.regions[m.name]}, "cluster "+m.name); err != nil {
				return nil, err
			}
		}
	}
	for _, m := range c.nets {
		for _, v := range m.values {
			if err := add("locality-region-networks", v, Client{Region: m.name}, "region "+m.name); err != nil {
				return nil, err
			}
		}
	}
	for _, tables := range [][]byLength{l.v4, l.v6} {
		slices.SortFunc(tables, func(a, b byLength) int { return b.bits - a.bits })
	}
	return l, nil
}

// network reads a CIDR prefix ("10.1.0.0/16") or one address (a /32 or /128).
func network(v string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(v); err == nil {
		if p.Addr().Is4In6() {
			return netip.Prefix{}, fmt.Errorf("network %q: write an IPv4 network as such", v)
		}
		return p.Masked(), nil
	}
	if a, err := netip.ParseAddr(v); err == nil {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.Prefix{}, fmt.Errorf("%q is neither a network (10.1.0.0/16) nor an address", v)
}
