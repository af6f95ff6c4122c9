package record

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"
)

// Value is the JSON object gatewaydns writes at a record key: the fields of msg.Service that
// every SkyDNS reader understands, plus "owner" (the field external-dns writes with
// --coredns-strictly-owned) and "sources", the objects behind the record. Readers that do not
// know the last two ignore them.
type Value struct {
	msg.Service
	Owner string `json:"owner,omitempty"`
	// Sources are the Kubernetes objects that asked for the name ("HTTPRoute/ns/name"): the
	// first MaxSources in sort order, so that a name a thousand routes share keeps a small value.
	Sources []string `json:"sources,omitempty"`
	// SourceCount is how many objects asked for the name when the value was written, set only
	// when that is more than Sources lists.
	SourceCount int `json:"sourceCount,omitempty"`
	// Steering is the owner's policy for the name (steering.go); a value without one has no
	// "steering" field, and so the bytes it had before steering existed.
	Steering Steering `json:"steering,omitzero"`
	// SteeringIgnored says why Decode dropped the value's steering: the record is served, as
	// a record without a policy. "" when it did not.
	SteeringIgnored string `json:"-"`
}

// MaxSources is how many source objects a value lists at most.
const MaxSources = 3

// NewValue is the value owner writes for one target of ep: host = target, the endpoint's TTL,
// targetstrip 1 (as external-dns writes, so an SRV target of an IP host is the name itself),
// and the endpoint's steering policy, if it has one.
func NewValue(ep Endpoint, owner, target string) Value {
	v := Value{Owner: owner}
	v.Host = target
	v.TTL = ep.TTL
	v.TargetStrip = 1
	v.setSources(ep.Sources)
	v.Steering = ep.Steering
	return v
}

// setSources lists the first MaxSources of sources, and how many there are when that is more.
func (v *Value) setSources(sources []ObjectRef) {
	if len(sources) > 0 {
		v.Sources = make([]string, min(len(sources), MaxSources))
		for i := range v.Sources {
			v.Sources[i] = sources[i].String()
		}
	}
	if len(sources) > MaxSources {
		v.SourceCount = len(sources)
	}
}

// Encode is the JSON of v. The field order is fixed, so equal values encode to equal bytes.
func (v Value) Encode() []byte {
	b, err := json.Marshal(v)
	if err != nil { // only strings, ints and bools: cannot happen
		panic("record: encoding value: " + err.Error())
	}
	return b
}

// Equal reports whether v and o say the same thing (msg.Service.Key is not part of a value).
func (v Value) Equal(o Value) bool {
	a, b := v.Service, o.Service
	a.Key, b.Key = "", ""
	if a != b || v.Owner != o.Owner || v.SourceCount != o.SourceCount || len(v.Sources) != len(o.Sources) ||
		v.Steering != o.Steering {
		return false
	}
	for i := range v.Sources {
		if v.Sources[i] != o.Sources[i] {
			return false
		}
	}
	return true
}

// Current reports whether v, as read from etcd, needs no rewrite to become want: it answers the
// same, has the same owner and steering, and lists the same sources. Only the count of a list cut short may
// differ: a route joining or leaving a name that a thousand routes share, beyond the listed
// ones, changes no answer, so it writes nothing.
func (v Value) Current(want Value) bool {
	if v.SourceCount > len(v.Sources) && want.SourceCount > len(want.Sources) {
		v.SourceCount = want.SourceCount
	}
	return v.Equal(want)
}

// ParseValue decodes a value loosely: unknown fields are ignored and nothing is validated
// (use Decode to validate what is served).
func ParseValue(b []byte) (Value, error) {
	var v Value
	err := json.Unmarshal(b, &v)
	return v, err
}

// OwnerOf returns the "owner" field of a value, or "" when the value has none or is not a
// JSON object (a key written by hand, or by external-dns without strict ownership).
func OwnerOf(value []byte) string {
	var o struct {
		Owner string `json:"owner"`
	}
	if json.Unmarshal(value, &o) != nil {
		return ""
	}
	return o.Owner
}

// NormalizeName lower-cases a DNS name and drops a trailing dot: the form of Endpoint.Name.
func NormalizeName(name string) string {
	return strings.TrimSuffix(strings.ToLower(name), ".")
}

// NamePath is the key of name under prefix, without a trailing slash: labels reversed,
// lower-cased, e.g. NamePath("skydns", "*.apps.example.com") = "/skydns/com/example/apps/*".
// A record of the name is one level deeper (see Key); a prefix read of NamePath+"/" returns the
// name's records and those of every name below it.
func NamePath(prefix, name string) string {
	return msg.Path(NormalizeName(name), prefix)
}

// KeySuffix is the last key element of owner's record for target: the first 8 hex digits of
// sha256(owner NUL target). It has the shape of external-dns's random suffix and is the same on
// every run, so a restart or a resync rewrites nothing.
func KeySuffix(owner, target string) string { return keySuffix(owner, strings.ToLower(target)) }

// keySuffix is the one hash behind every record's key suffix: the first 8 hex digits of
// sha256(owner NUL what), what being the record's canonical form (a lower-cased target, or
// Typed.String).
func keySuffix(owner, what string) string {
	h := sha256.New()
	h.Write([]byte(owner))
	h.Write([]byte{0})
	h.Write([]byte(what))
	return hex.EncodeToString(h.Sum(nil))[:8]
}

// Key is the etcd key of owner's record of name pointing to target, e.g.
// Key("skydns", "*.a.b", "c1", "10.0.0.1") = "/skydns/b/a/*/<8 hex>".
func Key(prefix, name, owner, target string) string {
	return NamePath(prefix, name) + "/" + KeySuffix(owner, target)
}

// AnswerKind is what a record gives an answer, as msg.Service.HostType tells it: the one
// classification the CNAME rule uses, when writers plan (package plan) and when the server
// answers (package index).
type AnswerKind uint8

const (
	// Address: an IP host, answering A or AAAA.
	Address AnswerKind = iota
	// CNAME: a host that is a name, without text.
	CNAME
	// Text: text (with a host that is a name, or none), answering TXT only.
	Text
	// Target: a host that is a name, without text, with a port or "mail": an SRV or MX
	// target, not a CNAME. The stock plugin answers it to A questions as a CNAME all the same;
	// the CNAME rule lets it do so only on a name that holds nothing else (see PartOf).
	Target
)

// KindOf is the AnswerKind of s.
func KindOf(s *msg.Service) AnswerKind {
	what, _ := s.HostType()
	return KindOfType(s, what)
}

// KindOfType is the AnswerKind of s, whose host is of the type what (msg.Service.HostType):
// KindOf without parsing the host again.
func KindOfType(s *msg.Service, what uint16) AnswerKind {
	switch what {
	case dns.TypeCNAME:
		if s.Port > 0 || s.Mail {
			return Target
		}
		return CNAME
	case dns.TypeTXT:
		return Text
	}
	return Address
}
