package record

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
)

// Types of the records an Endpoint carries besides its address and CNAME targets.
const (
	TypeTXT = "TXT"
	TypeSRV = "SRV"
	TypeMX  = "MX"
)

// Typed is one TXT, SRV or MX record of an Endpoint. Build it with TXT, SRV or MX, which
// normalize it: String is then its canonical form, and two records are the same record when
// their Strings are equal.
type Typed struct {
	Type string // TypeTXT, TypeSRV or TypeMX
	// Text is the TXT data, as the readers answer it (split into 255-byte strings).
	Text string
	// Host is the SRV or MX target: a lower-cased host name without the trailing dot.
	Host string
	// Port is the SRV port.
	Port uint16
	// Priority is the SRV priority or the MX preference.
	Priority uint16
	// Weight is the SRV weight.
	Weight uint16
}

// TXT is a TXT record of text.
func TXT(text string) Typed { return Typed{Type: TypeTXT, Text: text} }

// SRV is an SRV record to host.
func SRV(priority, weight, port uint16, host string) Typed {
	return Typed{Type: TypeSRV, Priority: priority, Weight: weight, Port: port, Host: NormalizeName(host)}
}

// MX is an MX record to host with preference.
func MX(preference uint16, host string) Typed {
	return Typed{Type: TypeMX, Priority: preference, Host: NormalizeName(host)}
}

// String is the canonical form: `TXT "text"` (Go quoting), `SRV priority weight port host`,
// `MX preference host`. It names the record in its key suffix, in logs and in Events.
func (r Typed) String() string {
	switch r.Type {
	case TypeTXT:
		return "TXT " + strconv.Quote(r.Text)
	case TypeSRV:
		return fmt.Sprintf("SRV %d %d %d %s", r.Priority, r.Weight, r.Port, r.Host)
	case TypeMX:
		return fmt.Sprintf("MX %d %s", r.Priority, r.Host)
	}
	return r.Type + " ?"
}

// KeySuffix is the last key element of owner's key for r: the first 8 hex digits of
// sha256(owner NUL canonical form), the shape of an address's (KeySuffix). The canonical form
// holds a space, which no address or host name target does, so the two never share a suffix
// by construction; unlike a target, text is hashed as it is (TXT data is case-sensitive).
func (r Typed) KeySuffix(owner string) string { return keySuffix(owner, r.String()) }

// Key is the etcd key of owner's record r of name.
func (r Typed) Key(prefix, name, owner string) string {
	return NamePath(prefix, name) + "/" + r.KeySuffix(owner)
}

// Compare orders records by their canonical form.
func (r Typed) Compare(o Typed) int { return cmp.Compare(r.String(), o.String()) }

// SortTyped sorts records by their canonical form and drops duplicates: the form of
// Endpoint.Records.
func SortTyped(rs []Typed) []Typed {
	slices.SortFunc(rs, Typed.Compare)
	return slices.CompactFunc(rs, func(a, b Typed) bool { return a.String() == b.String() })
}

// HasType reports whether rs holds a record of type t.
func HasType(rs []Typed, t string) bool {
	return slices.ContainsFunc(rs, func(r Typed) bool { return r.Type == t })
}

// NewTypedValue is the value owner writes for the record r of ep, in the SkyDNS format the
// stock etcd plugin answers:
//
//   - TXT: {"text": ...};
//   - SRV: {"host": target, "port", "priority", "weight"} at the SRV owner name;
//   - MX: {"host": target, "priority": preference, "mail": true}.
//
// targetstrip stays 0 for SRV and MX: readers strip that many labels off a host-name target.
// Priority and weight 0 are left out of the JSON, so readers take them as their defaults, 10
// and 100 (the format cannot say 0).
func NewTypedValue(ep Endpoint, owner string, r Typed) Value {
	v := Value{Owner: owner}
	v.TTL = ep.TTL
	switch r.Type {
	case TypeTXT:
		v.Text = r.Text
	case TypeSRV:
		v.Host, v.Port, v.Priority, v.Weight = r.Host, int(r.Port), int(r.Priority), int(r.Weight)
	case TypeMX:
		v.Host, v.Priority, v.Mail = r.Host, int(r.Priority), true
	}
	v.setSources(ep.Sources)
	return v
}
