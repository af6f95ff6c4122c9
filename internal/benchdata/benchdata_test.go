package benchdata

import (
	"strings"
	"testing"
)

func TestDatasetKeysAndAddressesAreUnique(t *testing.T) {
	for _, n := range []int{40, 1000, 10000} {
		d := New("skydns", n)
		if got := len(d.Records); got < n*95/100 || got > n {
			t.Errorf("New(%d) has %d records", n, got)
		}
		keys := map[string]bool{}
		for _, r := range d.Records {
			if keys[r.Key] {
				t.Fatalf("New(%d): duplicate key %s", n, r.Key)
			}
			keys[r.Key] = true
			if !strings.HasPrefix(r.Key, "/skydns/cluster/openmcp/bench/") {
				t.Fatalf("key %s outside the zone's bench subtree", r.Key)
			}
		}
		if len(d.Hosts) != len(d.A)+len(d.AAAA) {
			t.Errorf("hosts lines %d, want one per A and AAAA name (%d)", len(d.Hosts), len(d.A)+len(d.AAAA))
		}
		ips := map[string]bool{}
		for _, h := range d.Hosts {
			ip, _, _ := strings.Cut(h, " ")
			if ips[ip] {
				t.Fatalf("address %s used twice", ip)
			}
			ips[ip] = true
		}
	}
}

func TestQueriesFollowTheMixDeterministically(t *testing.T) {
	d := New("skydns", 1000)
	tests := []struct {
		m       Mix
		allowed map[string]bool // name prefixes
	}{
		{MixBasic, map[string]bool{"h": true, "v": true, "x": true}},
		{MixFull, map[string]bool{"h": true, "v": true, "x": true, "c": true, "_": true, "t": true}},
	}
	for _, tt := range tests {
		qs := d.Queries(tt.m, 2000)
		if len(qs) != 2000 {
			t.Fatalf("%s: %d queries", tt.m.Name, len(qs))
		}
		seen := map[string]int{}
		for _, q := range qs {
			p := q.Name[:1]
			if !tt.allowed[p] {
				t.Fatalf("%s: unexpected question %s %s", tt.m.Name, q.Name, q.Type)
			}
			seen[p]++
		}
		if len(seen) != len(tt.allowed) {
			t.Errorf("%s: kinds asked %v, want all of %v", tt.m.Name, seen, tt.allowed)
		}
		if again := d.Queries(tt.m, 2000); again[17] != qs[17] {
			t.Errorf("%s: queries are not deterministic", tt.m.Name)
		}
	}
}

func TestEveryAAAAAddressIsValidPastThe65535thName(t *testing.T) {
	for _, tc := range []struct {
		i    int
		want string
	}{{0, "fd00::1"}, {65534, "fd00::ffff"}, {65535, "fd00::1:0"}, {999_999, "fd00::f:4240"}} {
		if got := IPv6(tc.i); got != tc.want {
			t.Errorf("IPv6(%d) = %s, want %s", tc.i, got, tc.want)
		}
	}
}
