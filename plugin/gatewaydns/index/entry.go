package index

import (
	"net"
	"unique"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// entry is one decoded value, in 128 bytes: at a million records every field counts. What few
// values have (text, a group, an IPv6 address, an unusual targetstrip) sits behind more. An
// entry never changes once stored: answer sets and Address records refer into it.
type entry struct {
	key     string   // the etcd key, whose path elements name the tree's nodes
	host    string   // as the value has it: plugin.A tells records apart by it
	sources []string // the objects behind the record, as its writer listed them
	more    *entryMore
	owner   unique.Handle[string] // the writer that owns the key, "" when none: a few write them all

	lease    int64
	created  int64 // the key's create revision: which of a CNAME and other data answers (cname.go)
	revision int64 // the key's mod revision
	seen     int64 // when this server learned the value, in Unix nanoseconds (a time.Time is 24 bytes)

	ttl      uint32 // the record's TTL: the value's, DefaultTTL when it has none
	valueTTL uint32 // the value's own ttl, 0 when absent: lease arithmetic needs to know
	port     int32  // -1..65535
	priority uint16 // defaultPriority when the value has none
	weight   uint16
	flags    entryFlags
	kind     record.AnswerKind
	ip4      [4]byte // the host's address when it is an IPv4 one (flags say)
}

type entryFlags uint8

const (
	mailFlag   entryFlags = 1 << iota // "mail": true
	strip1Flag                        // "targetstrip": 1, what external-dns and gatewaydns write
	ipv4Flag                          // the host is an IPv4 address, in ip4
	ipv6Flag                          // the host is an IPv6 address, in more.ip6
)

// entryMore are the fields of an entry that few values have.
type entryMore struct {
	text        string
	group       string
	targetStrip int // other than 0 and 1
	ip6         [16]byte
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
		key: kv.Key, host: s.Host, sources: v.Sources, owner: unique.Make(v.Owner),
		lease: kv.Lease, created: kv.Created, revision: kv.Revision, seen: seen,
		ttl: s.TTL, valueTTL: s.TTL, port: int32(s.Port), priority: uint16(s.Priority), weight: uint16(s.Weight), // #nosec G115 -- record.Decode checks the ranges
		kind: record.KindOf(s),
	}
	if e.ttl == 0 {
		e.ttl = DefaultTTL
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
	switch what, ip := s.HostType(); what {
	case dns.TypeA:
		e.flags |= ipv4Flag
		copy(e.ip4[:], ip)
	case dns.TypeAAAA:
		e.flags |= ipv6Flag
		copy(e.moreParts().ip6[:], ip)
	}
	return e
}

// service is the record as the stock plugin reads it, with its defaults for TTL and priority.
func (e *entry) service() msg.Service {
	s := msg.Service{Host: e.host, Port: int(e.port), Priority: int(e.priority), Weight: int(e.weight),
		Mail: e.flags&mailFlag != 0, TTL: e.ttl, Key: e.key}
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

// plainAddress reports whether the record is an address and nothing else an A or AAAA answer
// could tell apart: no lease, no text, no group.
func (e *entry) plainAddress() bool {
	return e.lease == 0 && e.flags&(ipv4Flag|ipv6Flag) != 0 && (e.more == nil || e.more.text == "" && e.more.group == "")
}

// address is the record's address, of the family qtype asks for (A or AAAA); ok is false when
// it has none of that family. The IP refers into the entry.
func (e *entry) address(qtype uint16) (a Address, ok bool) {
	switch {
	case qtype == dns.TypeA && e.flags&ipv4Flag != 0:
		return Address{IP: net.IP(e.ip4[:]), TTL: e.ttl}, true
	case qtype == dns.TypeAAAA && e.flags&ipv6Flag != 0:
		return Address{IP: net.IP(e.more.ip6[:]), TTL: e.ttl}, true
	}
	return Address{}, false
}

// ownerName is the writer that owns the key, "" when none.
func (e *entry) ownerName() string { return e.owner.Value() }
