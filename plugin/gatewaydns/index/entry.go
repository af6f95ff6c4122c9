package index

import (
	"encoding/binary"
	"net"
	"net/netip"
	"unique"
	"unsafe"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// entry is one decoded value, in 80 bytes: at a million records every field counts. Its key is
// where it sits in the tree; a host that is an address written the usual way is kept as the
// address alone; what few values have (text, a group, an unusual targetstrip) and what only
// Explain reads (owner, sources) sit behind pointers. An entry never changes once stored:
// answer sets and Address records refer into it.
type entry struct {
	// host is the host as the value has it, but "" when it is the canonical form of ip4
	// (hostIP4 flag), and the 16 bytes of the address when it is the canonical form of an
	// IPv6 address (hostIP6): plugin.A tells records apart by the host as written.
	host   string
	origin *origin
	more   *entryMore

	lease    int64
	created  int64 // the key's create revision: which of a CNAME and other data answers (cname.go)
	revision int64 // the key's mod revision
	seen     int64 // when this server learned the value, in Unix nanoseconds (a time.Time is 24 bytes)

	valueTTL uint32 // the value's own ttl, 0 when absent: the record's TTL is then DefaultTTL
	port     uint16 // noPort flag: -1
	priority uint16 // defaultPriority when the value has none
	weight   uint16
	flags    entryFlags
	kind     record.AnswerKind
	ip4      [4]byte // the host's address when it is an IPv4 one (ipv4Flag)
}

type entryFlags uint8

const (
	mailFlag    entryFlags = 1 << iota // "mail": true
	strip1Flag                         // "targetstrip": 1, what external-dns and gatewaydns write
	ipv4Flag                           // the host is an IPv4 address, in ip4
	ipv6Flag                           // the host is an IPv6 address, in host (hostIP6) or more.ip6
	hostIP4                            // the host is ip4 in its canonical form, host is ""
	hostIP6                            // the host is an IPv6 address in its canonical form, host its 16 bytes
	noPort                             // "port": -1
	steeredFlag                        // the value carries a steering policy, in more.steering
)

// origin is who wrote a record, for Explain: in one object with the string of its sources.
type origin struct {
	owner unique.Handle[string] // the writer that owns the key: a few write them all
	// sources are the objects behind the record, as its writer listed them (sourceList): the
	// one source itself, where there is one (nearly always) not starting with a NUL; else a
	// NUL and each source after its length. "": none.
	sources string
}

// encodeSources is the origin.sources of list.
func encodeSources(list []string) string {
	switch {
	case len(list) == 0:
		return ""
	case len(list) == 1 && list[0] != "" && list[0][0] != 0:
		return list[0]
	}
	b := []byte{0}
	for _, s := range list {
		b = append(binary.AppendUvarint(b, uint64(len(s))), s...)
	}
	return string(b)
}

// decodeSources is the list of an origin.sources.
func decodeSources(s string) []string {
	switch {
	case s == "":
		return nil
	case s[0] != 0:
		return []string{s}
	}
	var list []string
	for rest := s[1:]; rest != ""; {
		n, size := binary.Uvarint([]byte(rest))
		rest = rest[size:]
		list = append(list, rest[:n])
		rest = rest[n:]
	}
	return list
}

// entryMore are the fields of an entry that few values have.
type entryMore struct {
	text        string
	group       string
	targetStrip int      // other than 0 and 1
	ip6         [16]byte // an IPv6 host written otherwise than canonically
	// steering is the owner's policy for the name (steeredFlag), interned: the values of a
	// name, and often of many names, carry the same one.
	steering unique.Handle[record.Steering]
}

func (e *entry) moreParts() *entryMore {
	if e.more == nil {
		e.more = &entryMore{}
	}
	return e.more
}

// newEntry is the entry of a decoded value v found at kv, learned at seen.
func newEntry(kv record.KV, v *record.Value, seen int64) *entry {
	s := &v.Service
	e := &entry{
		host:  s.Host,
		lease: kv.Lease, created: kv.Created, revision: kv.Revision, seen: seen,
		valueTTL: s.TTL, port: uint16(s.Port), priority: uint16(s.Priority), weight: uint16(s.Weight), // #nosec G115 -- record.Decode checks the ranges
	}
	what, ip := s.HostType()
	e.kind = record.KindOfType(s, what)
	if v.Owner != "" || len(v.Sources) > 0 {
		e.origin = &origin{owner: unique.Make(v.Owner), sources: encodeSources(v.Sources)}
	}
	if s.Port == -1 {
		e.flags |= noPort
	}
	if e.priority == 0 {
		e.priority = defaultPriority
	}
	if s.Mail {
		e.flags |= mailFlag
	}
	switch s.TargetStrip {
	case 0:
	case 1:
		e.flags |= strip1Flag
	default:
		e.moreParts().targetStrip = s.TargetStrip
	}
	if s.Text != "" || s.Group != "" {
		m := e.moreParts()
		m.text, m.group = s.Text, s.Group
	}
	if !v.Steering.IsZero() {
		e.flags |= steeredFlag
		e.moreParts().steering = unique.Make(v.Steering)
	}
	var buf [maxAddressLen]byte
	switch what {
	case dns.TypeA:
		e.flags |= ipv4Flag
		copy(e.ip4[:], ip)
		if e.flags |= hostIP4; string(e.appendAddress(buf[:0])) == s.Host {
			e.host = ""
		} else {
			e.flags &^= hostIP4
		}
	case dns.TypeAAAA:
		e.flags |= ipv6Flag
		if e.flags |= hostIP6; string(netip.AddrFrom16([16]byte(ip)).AppendTo(buf[:0])) == s.Host {
			e.host = string(ip)
		} else {
			e.flags &^= hostIP6
			copy(e.moreParts().ip6[:], ip)
		}
	}
	return e
}

// hasHost reports whether the value has a host.
func (e *entry) hasHost() bool { return e.host != "" || e.flags&hostIP4 != 0 }

// hostName is the host as the value has it.
func (e *entry) hostName() string {
	if e.flags&(hostIP4|hostIP6) == 0 {
		return e.host
	}
	return string(e.appendAddress(nil))
}

// appendAddress appends the canonical form of the host's address to b: the host, where it is
// written so (hostIP4, hostIP6).
func (e *entry) appendAddress(b []byte) []byte {
	if e.flags&hostIP4 != 0 {
		return netip.AddrFrom4(e.ip4).AppendTo(b)
	}
	return netip.AddrFrom16([16]byte([]byte(e.host))).AppendTo(b)
}

// addressLen is the most appendAddress appends, 0 when the host is not kept as its address.
func (e *entry) addressLen() int {
	switch {
	case e.flags&hostIP4 != 0:
		return len("255.255.255.255")
	case e.flags&hostIP6 != 0:
		return maxAddressLen
	}
	return 0
}

// maxAddressLen is the longest host appendAddress appends.
const maxAddressLen = len("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")

// sameHost reports whether e and o have the same host, as written. A host kept as its address
// (hostIP4, hostIP6) is written canonically, and no other host is: a host written otherwise
// that parsed to the same address would be kept as written.
func (e *entry) sameHost(o *entry) bool {
	const canonical = hostIP4 | hostIP6
	switch {
	case e.flags&canonical != o.flags&canonical:
		return false
	case e.flags&hostIP4 != 0:
		return e.ip4 == o.ip4
	}
	return e.host == o.host
}

// service is the record at key as the stock plugin reads it, with its defaults for TTL and
// priority. host is its host (hostName).
func (e *entry) service(key, host string) msg.Service {
	s := msg.Service{Host: host, Port: int(e.port), Priority: int(e.priority), Weight: int(e.weight),
		Mail: e.flags&mailFlag != 0, TTL: e.ttl(), Key: key}
	if e.flags&noPort != 0 {
		s.Port = -1
	}
	if e.flags&strip1Flag != 0 {
		s.TargetStrip = 1
	}
	if m := e.more; m != nil {
		s.Text, s.Group = m.text, m.group
		if m.targetStrip != 0 {
			s.TargetStrip = m.targetStrip
		}
	}
	return s
}

// ttl is the record's TTL: the value's, DefaultTTL when it has none.
func (e *entry) ttl() uint32 {
	if e.valueTTL == 0 {
		return DefaultTTL
	}
	return e.valueTTL
}

// plainAddress reports whether the record is an address and nothing else an A or AAAA answer
// could tell apart: no lease, no text, no group, no steering policy (whose answer is chosen
// per question).
func (e *entry) plainAddress() bool {
	return e.lease == 0 && e.flags&(ipv4Flag|ipv6Flag) != 0 && e.flags&steeredFlag == 0 &&
		(e.more == nil || e.more.text == "" && e.more.group == "")
}

// steering is the owner's policy for the name that the value carries; zero for none.
func (e *entry) steering() record.Steering {
	if e.flags&steeredFlag == 0 {
		return record.Steering{}
	}
	return e.more.steering.Value()
}

// address is the record's address, of the family qtype asks for (A or AAAA); ok is false when
// it has none of that family. The IP refers into the entry.
func (e *entry) address(qtype uint16) (a Address, ok bool) {
	switch {
	case qtype == dns.TypeA && e.flags&ipv4Flag != 0:
		return Address{IP: net.IP(e.ip4[:]), TTL: e.ttl()}, true
	case qtype == dns.TypeAAAA && e.flags&hostIP6 != 0:
		return Address{IP: net.IP(unsafe.Slice(unsafe.StringData(e.host), len(e.host))), TTL: e.ttl()}, true
	case qtype == dns.TypeAAAA && e.flags&ipv6Flag != 0:
		return Address{IP: net.IP(e.more.ip6[:]), TTL: e.ttl()}, true
	}
	return Address{}, false
}

// ownerName is the writer that owns the key, "" when none.
func (e *entry) ownerName() string {
	if e.origin == nil {
		return ""
	}
	return e.origin.owner.Value()
}

// sourceList is the objects behind the record.
func (e *entry) sourceList() []string {
	if e.origin == nil {
		return nil
	}
	return decodeSources(e.origin.sources)
}
