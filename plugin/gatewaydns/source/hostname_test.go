package source

import "testing"

func TestIntersectHostnames(t *testing.T) {
	cases := []struct {
		route, listener, want string
		ok                    bool
	}{
		{"", "", "", false},
		{"", "a.example.com", "a.example.com", true},
		{"a.example.com", "", "a.example.com", true},
		{"a.example.com", "a.example.com", "a.example.com", true},
		{"a.example.com", "*.example.com", "a.example.com", true},
		{"*.example.com", "a.example.com", "a.example.com", true},
		{"*.example.com", "*.a.example.com", "*.a.example.com", true},
		{"*.a.example.com", "*.example.com", "*.a.example.com", true},
		{"example.com", "*.example.com", "", false},
		{"*.example.com", "example.com", "", false},
		{"xexample.com", "*.example.com", "", false},
		{"a.example.com", "b.example.com", "", false},
		{"*.a.example.com", "*.b.example.com", "", false},
	}
	for _, tc := range cases {
		got, ok := intersectHostnames(tc.route, tc.listener)
		if got != tc.want || ok != tc.ok {
			t.Errorf("intersectHostnames(%q, %q) = %q, %v; want %q, %v", tc.route, tc.listener, got, ok, tc.want, tc.ok)
		}
	}
}

func TestNormalizeTarget(t *testing.T) {
	cases := []struct {
		in, want string
		isIP, ok bool
	}{
		{"10.0.0.1", "10.0.0.1", true, true},
		{" 2001:DB8:0::1 ", "2001:db8::1", true, true},
		{"::ffff:10.0.0.1", "10.0.0.1", true, true},
		{"LB.Example.net.", "lb.example.net", false, true},
		{"1.2.3.4.", "1.2.3.4", true, true},
		{"fe80::1%eth0", "", false, false},
		{"*.example.net", "", false, false},
		{"bad_host", "", false, false},
		{"", "", false, false},
	}
	for _, tc := range cases {
		got, isIP, err := normalizeTarget(tc.in)
		if got != tc.want || isIP != tc.isIP || (err == nil) != tc.ok {
			t.Errorf("normalizeTarget(%q) = %q, %v, %v; want %q, %v, ok=%v", tc.in, got, isIP, err, tc.want, tc.isIP, tc.ok)
		}
	}
}

func TestParseTTL(t *testing.T) {
	cases := []struct {
		in   string
		want uint32
		ok   bool
	}{
		{"60", 60, true},
		{" 60 ", 60, true},
		{"1", 1, true},
		{"2147483647", 2147483647, true},
		{"2147483648", 0, false},
		{"0", 0, false},
		{"-1", 0, false},
		{"10m", 600, true},
		{"1h1s", 3601, true},
		{"999ms", 0, false},
		{"600000h", 0, false},
		{"1.5", 0, false},
		{"", 0, false},
	}
	for _, tc := range cases {
		got, err := parseTTL(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("parseTTL(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
