package record

import (
	"slices"
	"strings"

	"github.com/coredns/coredns/plugin/pkg/dnsutil"
	"github.com/miekg/dns"
)

// Reading a key. A SkyDNS key is a name's labels reversed below the path prefix: the stock etcd
// plugin reads /skydns/cluster/openmcp/app as app.openmcp.cluster. (msg.Domain), and answers a
// question for a name from its key and every key below it. Writers (external-dns, gatewaydns)
// put each record of a name one level below the name's key, under a record id:
// /skydns/cluster/openmcp/app/3e6bee2e is a record of app.openmcp.cluster. These functions are
// that reading, for both paths:
//
//   - KeyName: the name a key stands for, as the stock plugin reads it;
//   - NameOf: the name a key's record belongs to: its own, or its parent's for a record id
//     (IsRecordID), which is how the index and the transfers read a key;
//   - RecordName: the publish side's reading, which always takes the parent;
//   - TargetName and TargetNameOf: the name an address record gives an SRV, MX or NS record as its
//     target, "targetstrip" labels taken off as the stock plugin takes them.

// KeyName is the name (fully qualified) that key below prefix stands for, as the stock plugin
// reads it: /skydns/cluster/openmcp/app is app.openmcp.cluster. ok is false for a key outside
// prefix, or for prefix itself.
func KeyName(prefix, key string) (name string, ok bool) {
	elems, ok := elements(prefix, key)
	if !ok {
		return "", false
	}
	return nameOf(elems) + ".", true
}

// NameOf is the name (fully qualified) whose record key is: the name of the key above it when
// key's last element is a record id (IsRecordID), its own name (KeyName) otherwise. So
// /skydns/cluster/openmcp/app and /skydns/cluster/openmcp/app/3e6bee2e both belong to
// app.openmcp.cluster., and /skydns/cluster/openmcp/app/www to www.app.openmcp.cluster.: a key
// written by hand one level down is a name of its own, as the stock plugin answers it.
func NameOf(prefix, key string) (name string, ok bool) {
	elems, ok := elements(prefix, key)
	if !ok {
		return "", false
	}
	if n := len(elems); n > 1 && IsRecordID(elems[n-1]) {
		elems = elems[:n-1]
	}
	return nameOf(elems) + ".", true
}

// RecordName is the name, without the trailing dot, that a key of the writers' layout is a
// record of: always the name of the key above it. This is the publish side's reading, and it
// differs from NameOf on purpose: every key a writer holds is one it wrote (Key, Typed.Key),
// a record-id child of its name, and a key of another writer it adopts is one too, so the
// parent is its name whatever its last element looks like. ok is false for a key outside
// prefix or directly below it.
func RecordName(prefix, key string) (name string, ok bool) {
	elems, ok := elements(prefix, key)
	if !ok || len(elems) < 2 {
		return "", false
	}
	return nameOf(elems[:len(elems)-1]), true
}

// IsRecordID reports whether a key's last element names one record of the name above it rather
// than a name: 8 hex digits (the suffix external-dns and gatewaydns write, KeySuffix), digits,
// or x and digits (the x1, x2 of CoreDNS's etcd README).
func IsRecordID(label string) bool {
	digits := strings.TrimPrefix(label, "x")
	if digits != "" && strings.Trim(digits, "0123456789") == "" {
		return true
	}
	return len(label) == 8 && strings.Trim(label, "0123456789abcdef") == ""
}

// TargetName is the name an address record at key gives an SRV, MX or NS record as its target,
// as the stock plugin makes it: the key's name (msg.Domain) with strip labels taken off the
// front (the value's "targetstrip"), or the whole name when that would take them all. Like
// msg.Domain it takes the key's first element for the prefix: with a path of more elements
// the stock plugin's targets carry the rest of it, and so do these.
func TargetName(key string, strip int) string {
	name := domain(key)
	if t, ok := stripLabels(name, strip); ok {
		return t
	}
	return name
}

// TargetNameOf is TargetName worked out from name without allocating, where key is name's own key or a
// record-id child of it (the writers' layout); ok is false for other keys, whose TargetName is to
// be made the long way.
func TargetNameOf(key string, strip int, name string) (string, bool) {
	switch {
	case keyNameIs(key, false, name):
		if t, ok := stripLabels(name, strip); ok {
			return t, true
		}
		return name, true
	case strip > 0 && keyNameIs(key, true, name):
		return stripLabels(name, strip-1)
	}
	return "", false
}

// elements are the path elements of key below prefix: the one split of a key.
func elements(prefix, key string) ([]string, bool) {
	rest, ok := strings.CutPrefix(key, Root(prefix))
	rest = strings.Trim(rest, "/")
	if !ok || rest == "" {
		return nil, false
	}
	return strings.Split(rest, "/"), true
}

// nameOf is the name of path elements, without the trailing dot.
func nameOf(elems []string) string {
	labels := slices.Clone(elems)
	slices.Reverse(labels)
	return strings.Join(labels, ".")
}

// domain is msg.Domain without its panic on "" and "/": the elements after the key's first,
// reversed, "." for none.
func domain(key string) string {
	l := strings.Split(strings.TrimSuffix(key, "/"), "/")
	if len(l) < 3 {
		return "."
	}
	labels := slices.Clone(l[2:])
	slices.Reverse(labels)
	return dnsutil.Join(labels...)
}

// stripLabels drops n labels from the front of name as msg's targetStrip does; ok is false
// when that runs past the end.
func stripLabels(name string, n int) (string, bool) {
	offset, end := 0, false
	for range n {
		if offset, end = dns.NextLabel(name, offset); end {
			return "", false
		}
	}
	return name[offset:], true
}

// keyNameIs reports whether the name of key (msg.Domain; with parent, of the key above it) is
// name, an FQDN, without making it: "/skydns/cluster/openmcp/eu1/app/3e6bee2e" is
// "app.eu1.openmcp.cluster." with parent, "3e6bee2e.app.eu1.openmcp.cluster." without.
func keyNameIs(key string, parent bool, name string) bool {
	if len(key) < 2 || key[0] != '/' {
		return false
	}
	_, path, ok := strings.Cut(key[1:], "/") // without "/<prefix>"
	if !ok {
		return false
	}
	if parent {
		last := strings.LastIndexByte(path, '/')
		if last < 0 {
			return false
		}
		path = path[:last]
	}
	labels := strings.TrimSuffix(name, ".")
	for {
		i := strings.LastIndexByte(path, '/')
		label, rest, more := strings.Cut(labels, ".")
		if path[i+1:] != label || label == "" {
			return false
		}
		if i < 0 {
			return !more
		}
		if !more {
			return false
		}
		path, labels = path[:i], rest
	}
}

// ZoneDirs are the key prefixes of zones' records, one per zone (a zone inside another too),
// "/" at their end: "/skydns/cluster/openmcp/" for openmcp.cluster. A zone's serial is the
// newest revision under its own.
func ZoneDirs(prefix string, zones []string) []string {
	out := make([]string, 0, len(zones))
	for _, z := range zones {
		out = append(out, NamePath(prefix, z)+"/")
	}
	return out
}

// Outermost are dirs, key prefixes, without those inside another: what a server reads and
// watches for its zones, so that an etcd role with read on its zones is all it needs.
func Outermost(dirs []string) []string {
	all := slices.Clone(dirs)
	slices.Sort(all)
	var out []string
	for _, p := range all {
		if len(out) > 0 && strings.HasPrefix(p, out[len(out)-1]) {
			continue // equal to, or inside, the previous one
		}
		out = append(out, p)
	}
	return out
}
