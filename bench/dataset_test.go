package main

import (
	"strings"
	"testing"
)

func TestDataset(t *testing.T) {
	for _, n := range []int{40, 1000, 10000} {
		d := newDataset(n)
		if got := len(d.records); got < n*95/100 || got > n {
			t.Errorf("newDataset(%d) has %d records", n, got)
		}
		keys := map[string]bool{}
		for _, r := range d.records {
			if keys[r.key] {
				t.Fatalf("newDataset(%d): duplicate key %s", n, r.key)
			}
			keys[r.key] = true
			if !strings.HasPrefix(r.key, "/skydns/cluster/openmcp/bench/") {
				t.Fatalf("key %s outside the zone's bench subtree", r.key)
			}
		}
		if len(d.hosts) != len(d.a)+len(d.aaaa) {
			t.Errorf("hosts lines %d, want one per A and AAAA name (%d)", len(d.hosts), len(d.a)+len(d.aaaa))
		}
		ips := map[string]bool{}
		for _, h := range d.hosts {
			ip, _, _ := strings.Cut(h, " ")
			if ips[ip] {
				t.Fatalf("address %s used twice", ip)
			}
			ips[ip] = true
		}
	}
}

func TestQueries(t *testing.T) {
	d := newDataset(1000)
	tests := []struct {
		m       mix
		allowed map[string]bool // name prefixes
	}{
		{mixBasic, map[string]bool{"h": true, "v": true, "x": true}},
		{mixFull, map[string]bool{"h": true, "v": true, "x": true, "c": true, "_": true, "t": true}},
	}
	for _, tt := range tests {
		qs := d.queries(tt.m, 2000)
		if len(qs) != 2000 {
			t.Fatalf("%s: %d queries", tt.m.name, len(qs))
		}
		seen := map[string]int{}
		for _, q := range qs {
			p := q.name[:1]
			if !tt.allowed[p] {
				t.Fatalf("%s: unexpected question %s %s", tt.m.name, q.name, q.qtype)
			}
			seen[p]++
		}
		if len(seen) != len(tt.allowed) {
			t.Errorf("%s: kinds asked %v, want all of %v", tt.m.name, seen, tt.allowed)
		}
		if again := d.queries(tt.m, 2000); again[17] != qs[17] {
			t.Errorf("%s: queries are not deterministic", tt.m.name)
		}
		if in := dnsperfInput(qs[:2]); strings.Count(in, "\n") != 2 || !strings.HasSuffix(strings.Split(in, "\n")[0], " "+qs[0].qtype) {
			t.Errorf("dnsperfInput = %q", in)
		}
	}
}
