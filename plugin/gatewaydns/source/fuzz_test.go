package source

import (
	"strings"
	"testing"
)

// matches reports whether a normalized hostname pattern h (a name or "*.suffix") admits the
// name n under the Gateway API rules: equal, or covered by the wildcard.
func matches(h, n string) bool { return h == n || wildcardCovers(h, n) }

// FuzzHostnameIntersection: normalizeHostname then intersectHostnames never panic; the
// intersection is symmetric in which side is the route; a result is lower-case, a valid
// DNS-1123 (wildcard) name, and admitted by both inputs.
func FuzzHostnameIntersection(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""},
		{"", "a.example.com"},
		{"a.example.com", "*.example.com"},
		{"*.example.com", "*.a.example.com"},
		{"example.com", "*.example.com"},
		{"xexample.com", "*.example.com"},
		{"A.Example.COM.", "*.example.com"},
		{"*.*.example.com", "a.b.example.com"},
		{"10.0.0.1", "*.example.com"},
		{"[::1]", ""},
		{"-a.example.com", "*.example.com"},
		{strings.Repeat("a", 64) + ".com", "*.com"},
		{" a.example.com ", "a.example.com"},
		{"*", "*.com"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, rawRoute, rawListener string) {
		route, rerr := normalizeHostname(rawRoute)
		listener, lerr := normalizeHostname(rawListener)
		for _, n := range []struct {
			raw, norm string
			err       error
		}{{rawRoute, route, rerr}, {rawListener, listener, lerr}} {
			if n.err == nil {
				checkName(t, "normalizeHostname("+n.raw+")", n.norm)
				if again, err := normalizeHostname(n.norm); err != nil || again != n.norm {
					t.Fatalf("normalizeHostname is not idempotent on %q: %q, %v", n.norm, again, err)
				}
			}
		}
		// Absent sides are "", as the callers pass them; invalid ones are treated as absent.
		if rerr != nil {
			route = ""
		}
		if lerr != nil {
			listener = ""
		}
		got, ok := intersectHostnames(route, listener)
		rev, rok := intersectHostnames(listener, route)
		if ok != rok || got != rev {
			t.Fatalf("not symmetric: (%q,%q) = %q,%v but (%q,%q) = %q,%v", route, listener, got, ok, listener, route, rev, rok)
		}
		if !ok {
			if got != "" {
				t.Fatalf("(%q,%q): no match but result %q", route, listener, got)
			}
			return
		}
		checkName(t, "intersection", got)
		for _, side := range []string{route, listener} {
			if side != "" && !matches(side, got) {
				t.Fatalf("intersection of (%q,%q) = %q is not admitted by %q", route, listener, got, side)
			}
		}
	})
}

func checkName(t *testing.T, what, n string) {
	t.Helper()
	if n != strings.ToLower(n) {
		t.Fatalf("%s = %q: not lower-case", what, n)
	}
	if strings.HasSuffix(n, ".") {
		t.Fatalf("%s = %q: trailing dot", what, n)
	}
	if err := checkDNS1123(strings.TrimPrefix(n, "*.")); err != nil {
		t.Fatalf("%s = %q: not DNS-1123: %v", what, n, err)
	}
	if isIPLiteral(n) {
		t.Fatalf("%s = %q: an IP literal", what, n)
	}
}
