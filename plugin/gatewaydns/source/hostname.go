package source

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// normalizeName lower-cases a DNS name and drops one trailing dot.
func normalizeName(s string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
}

// normalizeHostname returns the canonical form of a hostname that a route, an Ingress, a
// listener or an annotation asks for: lower-cased, without a trailing dot, a DNS-1123 name
// optionally starting with the wildcard label "*.". IP literals are rejected.
func normalizeHostname(h string) (string, error) {
	n := normalizeName(h)
	if n == "" {
		return "", errors.New("hostname is empty")
	}
	if isIPLiteral(n) {
		return "", errors.New("hostname is an IP address, not a DNS name")
	}
	if err := checkDNS1123(strings.TrimPrefix(n, "*.")); err != nil {
		return "", fmt.Errorf("hostname is not a valid DNS name: %v", err)
	}
	return n, nil
}

// isIPLiteral reports whether s is an IP address, possibly in brackets or with a zone.
func isIPLiteral(s string) bool {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	_, err := netip.ParseAddr(s)
	return err == nil
}

// checkDNS1123 checks a lower-case DNS-1123 subdomain: at most 253 characters, labels of
// 1..63 characters of [a-z0-9-] that neither start nor end with '-'.
func checkDNS1123(s string) error {
	if len(s) > 253 {
		return fmt.Errorf("longer than 253 characters")
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" {
			return errors.New("empty label")
		}
		if len(label) > 63 {
			return fmt.Errorf("label %q is longer than 63 characters", label)
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("label %q starts or ends with '-'", label)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
				return fmt.Errorf("label %q holds %q; only a-z, 0-9 and '-' are allowed", label, c)
			}
		}
	}
	return nil
}

// isWildcard reports whether a normalized hostname starts with the wildcard label.
func isWildcard(h string) bool { return strings.HasPrefix(h, "*.") }

// wildcardCovers reports whether the wildcard w ("*.suffix") matches n: n ends in ".suffix"
// with one or more labels before it. n may itself be a (more specific) wildcard; "suffix"
// itself is never matched.
func wildcardCovers(w, n string) bool {
	if !isWildcard(w) {
		return false
	}
	suffix := w[1:] // ".suffix"
	return len(n) > len(suffix) && strings.HasSuffix(n, suffix)
}

// intersectHostnames intersects a route hostname with a listener hostname, both normalized
// ("" when absent), as the Gateway API defines it: an empty side takes the other; equal names
// give the name; a wildcard that covers the other name gives the more specific name. Both
// empty, or names that do not match, give ok == false.
func intersectHostnames(route, listener string) (name string, ok bool) {
	switch {
	case route == "":
		return listener, listener != ""
	case listener == "" || route == listener:
		return route, true
	case wildcardCovers(listener, route):
		return route, true
	case wildcardCovers(route, listener):
		return listener, true
	}
	return "", false
}

// normalizeTarget returns the canonical form of a target: an IP address in its standard
// text form (IPv4-mapped IPv6 addresses unmapped), or a lower-cased host name without a
// trailing dot and without wildcard.
func normalizeTarget(t string) (target string, isIP bool, err error) {
	n := normalizeName(t)
	if n == "" {
		return "", false, errors.New("target is empty")
	}
	if a, perr := netip.ParseAddr(n); perr == nil {
		if a.Zone() != "" {
			return "", false, fmt.Errorf("target %q has an IPv6 zone", t)
		}
		return a.Unmap().String(), true, nil
	}
	if err := checkDNS1123(n); err != nil {
		return "", false, fmt.Errorf("target %q is neither an IP address nor a valid host name: %v", t, err)
	}
	return n, false, nil
}

// isIPTarget reports whether a normalized target is an IP address (A/AAAA) rather than a
// host name (CNAME).
func isIPTarget(t string) bool {
	_, err := netip.ParseAddr(t)
	return err == nil
}
