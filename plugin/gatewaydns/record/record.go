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
	Key   string
	Value []byte
	Lease int64 // 0 when the key is not bound to a lease
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

// Decode parses a SkyDNS value found at key. It rejects what would make a broken answer:
// JSON that does not fit the format, a host that is neither an IP address nor a domain name,
// and a key whose name is not a valid domain name (it becomes the SRV target of IP hosts).
func Decode(key string, value []byte) (msg.Service, error) {
	var s msg.Service
	if err := json.Unmarshal(value, &s); err != nil {
		return s, fmt.Errorf("%s: %w", key, err)
	}
	if s.Host != "" && net.ParseIP(s.Host) == nil {
		if _, ok := dns.IsDomainName(s.Host); !ok || strings.ContainsAny(s.Host, " \t\n/") {
			return s, fmt.Errorf("%s: host %q is neither an IP address nor a domain name", key, s.Host)
		}
	}
	if s.Host == "" && s.Text == "" {
		return s, fmt.Errorf("%s: %w", key, errEmpty)
	}
	if _, ok := dns.IsDomainName(msg.Domain(key)); !ok {
		return s, fmt.Errorf("%s: key does not map to a valid domain name", key)
	}
	s.Key = key
	return s, nil
}

var errEmpty = errors.New("value has neither host nor text")
