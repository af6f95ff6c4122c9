// Package record is the SkyDNS model that the publish and serve paths share: where a name
// lives in etcd, and what a value in etcd means. It imports neither etcd nor Kubernetes.
package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path"
	"strings"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"
)

// DefaultPrefix is the etcd path that the stock etcd plugin and external-dns use.
const DefaultPrefix = "skydns"

// KV is one key of the store as the serve path sees it.
type KV struct {
	Key      string
	Value    []byte
	Lease    int64 // 0 when the key is not bound to a lease
	Revision int64 // the etcd revision that last changed the key
	Created  int64 // the etcd revision that created the key: the age of its claim on the name
}

// Change is one key put or deleted, in the order etcd applied it.
type Change struct {
	KV
	Deleted bool
}

// Root is the key prefix that every record under prefix starts with, e.g. "/skydns/".
// It cleans the prefix the same way msg.Path does, so "skydns", "/skydns" and "/skydns/"
// all name the same tree.
func Root(prefix string) string {
	return path.Join("/", prefix) + "/"
}

// Decode parses a SkyDNS value found at key, with the owner, sources and steering gatewaydns
// writes when they are there. It rejects what would make a broken answer: JSON that does not fit the
// format, a host that is neither an IP address nor a domain name, and a key whose name is not
// a valid domain name (it becomes the SRV target of IP hosts). A steering policy that cannot
// be used does not refuse the record: it is dropped, and SteeringIgnored says why.
func Decode(key string, value []byte) (Value, error) {
	var v Value
	shown := clip(key) // a hostile key or host must not make a megabyte log line
	if !parseValue(value, &v) {
		// Another variable, so that v stays on the stack on the fast path: encoding/json
		// takes its value's address through an interface, which moves it to the heap.
		var slow Value
		err := json.Unmarshal(value, &slow)
		if v = slow; err != nil {
			return v, fmt.Errorf("%s: %w", shown, err)
		}
	}
	s := &v.Service
	if s.Host != "" && net.ParseIP(s.Host) == nil {
		if _, ok := dns.IsDomainName(s.Host); !ok || strings.ContainsAny(s.Host, " \t\n/") {
			return v, fmt.Errorf("%s: host %q is neither an IP address nor a domain name", shown, clip(s.Host))
		}
	}
	if s.Host == "" && s.Text == "" {
		return v, fmt.Errorf("%s: %w", shown, errEmpty)
	}
	// SRV and MX carry these as 16 bits: a larger value would be answered wrapped around.
	// Port -1 is SkyDNS's "no SRV record for this host".
	for _, f := range []struct {
		name   string
		v, min int
	}{{"port", s.Port, -1}, {"priority", s.Priority, 0}, {"weight", s.Weight, 0}} {
		if f.v < f.min || f.v > 0xffff {
			return v, fmt.Errorf("%s: %s %d is outside %d..65535", shown, f.name, f.v, f.min)
		}
	}
	// msg.Domain panics on a key without a '/' below its first element ("", "/", "x").
	if strings.Count(strings.TrimSuffix(key, "/"), "/") == 0 {
		return v, fmt.Errorf("%s: key does not map to a valid domain name", shown)
	}
	if !plainKeyName(key) {
		if _, ok := dns.IsDomainName(msg.Domain(key)); !ok {
			return v, fmt.Errorf("%s: key does not map to a valid domain name", shown)
		}
	}
	if !v.Steering.IsZero() {
		st, err := v.Steering.Check()
		if err != nil {
			v.SteeringIgnored = fmt.Sprintf("%s: steering ignored, the record is answered without it: %v", shown, err)
		}
		v.Steering = st
	}
	s.Key = key
	return v, nil
}

var errEmpty = errors.New("value has neither host nor text")

// plainKeyName reports whether key maps (msg.Domain) to a name that is valid for certain: an
// absolute key whose elements after the first are 1 to 63 letters, digits, '-', '_' or '*',
// short enough. Building the name to check it was a tenth of loading a zone; other keys are
// checked the long way.
func plainKeyName(key string) bool {
	rest, ok := strings.CutPrefix(key, "/")
	if !ok || len(rest) > 250 {
		return false
	}
	rest = strings.TrimSuffix(rest, "/")
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return false
	}
	label := 0
	for _, c := range []byte(rest[i+1:]) {
		switch {
		case c == '/':
			if label == 0 {
				return false
			}
			label = 0
			continue
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '*':
		default:
			return false
		}
		if label++; label > 63 {
			return false
		}
	}
	return label > 0
}

// clip shortens s for an error message to its first 128 bytes and its length.
func clip(s string) string {
	const show = 128
	if len(s) <= show {
		return s
	}
	return fmt.Sprintf("%s...(%d bytes)", s[:show], len(s))
}
