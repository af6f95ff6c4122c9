package record

import (
	"slices"
	"testing"
)

// TestTheReadingOfAKey pins the one reading of a key, on the stock etcd plugin's own cases
// (plugin/etcd's lookup_test.go, whose keys are written there as names, and msg's path_test.go)
// and the writers' layout:
//
//   - keyName: the name the key stands for (msg.Domain);
//   - nameOf: the name its record belongs to, the parent's for a record id;
//   - recordName: the publish side's reading, always the parent (no trailing dot);
//   - target: the SRV, MX or NS target of an address stored there, with its targetstrip.
func TestTheReadingOfAKey(t *testing.T) {
	for _, tc := range []struct {
		behaviour                           string
		prefix, key                         string
		strip                               int
		keyName, nameOf, recordName, target string // "" for ok false (target: always made)
	}{
		{"stock: an SRV target is the key's name", "skydns", "/skydns/test/skydns/region1/prod/server1/a", 0,
			"a.server1.prod.region1.skydns.test.", "a.server1.prod.region1.skydns.test.", "server1.prod.region1.skydns.test",
			"a.server1.prod.region1.skydns.test."},
		{"stock: targetstrip 1 takes the last element off an SRV target", "skydns", "/skydns/test/skydns/targetstrip/a", 1,
			"a.targetstrip.skydns.test.", "a.targetstrip.skydns.test.", "targetstrip.skydns.test", "targetstrip.skydns.test."},
		{"stock: an NS key's address names the nameserver by its key", "skydns", "/skydns/test/skydns/dns/ns/a", 0,
			"a.ns.dns.skydns.test.", "a.ns.dns.skydns.test.", "ns.dns.skydns.test", "a.ns.dns.skydns.test."},
		{"stock: targetstrip on NS keys, c.ns.dns.skydns.test. for ns1", "skydns", "/skydns/test/skydns/dns/ns/c/ns1", 1,
			"ns1.c.ns.dns.skydns.test.", "ns1.c.ns.dns.skydns.test.", "c.ns.dns.skydns.test", "c.ns.dns.skydns.test."},
		{"stock: and for ns2", "skydns", "/skydns/test/skydns/dns/ns/c/ns2", 1,
			"ns2.c.ns.dns.skydns.test.", "ns2.c.ns.dns.skydns.test.", "c.ns.dns.skydns.test", "c.ns.dns.skydns.test."},
		{"stock: an apex record", "skydns", "/skydns/test/skydns_zonec/dns/apex/a1", 0,
			"a1.apex.dns.skydns_zonec.test.", "a1.apex.dns.skydns_zonec.test.", "apex.dns.skydns_zonec.test", "a1.apex.dns.skydns_zonec.test."},
		{"stock: a reverse name; its last label, digits, reads as a record id (a transfer writes reverse zones name by name)",
			"skydns", "/skydns/arpa/in-addr/10/0/0/1", 0,
			"1.0.0.10.in-addr.arpa.", "0.0.10.in-addr.arpa.", "0.0.10.in-addr.arpa", "1.0.0.10.in-addr.arpa."},
		{"msg: a trailing slash", "skydns", "/skydns/local/cluster/staging/service/", 0,
			"service.staging.cluster.local.", "service.staging.cluster.local.", "staging.cluster.local", "service.staging.cluster.local."},
		{"msg: another prefix", "mydns", "/mydns/local/skydns/staging/service", 0,
			"service.staging.skydns.local.", "service.staging.skydns.local.", "staging.skydns.local", "service.staging.skydns.local."},
		{"CoreDNS's README: x1 is a record of its parent", "skydns", "/skydns/local/skydns/x1", 0,
			"x1.skydns.local.", "skydns.local.", "skydns.local", "x1.skydns.local."},
		{"a writer's record id is a record of its parent, the target the name itself", "skydns", "/skydns/cluster/openmcp/app/3e6bee2e", 1,
			"3e6bee2e.app.openmcp.cluster.", "app.openmcp.cluster.", "app.openmcp.cluster", "app.openmcp.cluster."},
		{"a name's own key is that name; the publish side reads it as a record of the parent", "skydns", "/skydns/cluster/openmcp/app", 0,
			"app.openmcp.cluster.", "app.openmcp.cluster.", "openmcp.cluster", "app.openmcp.cluster."},
		{"a key written by hand one level down is a name of its own", "skydns", "/skydns/cluster/openmcp/app/www", 0,
			"www.app.openmcp.cluster.", "www.app.openmcp.cluster.", "app.openmcp.cluster", "www.app.openmcp.cluster."},
		{"a wildcard's record", "skydns", "/skydns/b/a/*/0011aabb", 0,
			"0011aabb.*.a.b.", "*.a.b.", "*.a.b", "0011aabb.*.a.b."},
		{"a record of a name of one label", "skydns", "/skydns/com/0011aabb", 0,
			"0011aabb.com.", "com.", "com", "0011aabb.com."},
		{"a record two levels down", "skydns", "/skydns/com/example/app/3e6bee2e", 0,
			"3e6bee2e.app.example.com.", "app.example.com.", "app.example.com", "3e6bee2e.app.example.com."},
		{"a targetstrip past the name's labels keeps the whole name", "skydns", "/skydns/test/a", 9,
			"a.test.", "a.test.", "test", "a.test."},
		{"one element: a name, and no record of any", "skydns", "/skydns/0011aabb", 0,
			"0011aabb.", "0011aabb.", "", "0011aabb."},
		{"outside the prefix", "skydns", "/other/com/example/x", 0, "", "", "", "x.example.com."},
		{"the prefix itself", "skydns", "/skydns/", 0, "", "", "", "."},
		{"a path of two elements: the names below it, but the stock target takes only the first for the prefix",
			"dns/zone", "/dns/zone/test/a", 0, "a.test.", "a.test.", "test", "a.test.zone."},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			for _, f := range []struct {
				what string
				read func(prefix, key string) (string, bool)
				want string
			}{{"KeyName", KeyName, tc.keyName}, {"NameOf", NameOf, tc.nameOf}, {"RecordName", RecordName, tc.recordName}} {
				if got, ok := f.read(tc.prefix, tc.key); got != f.want || ok != (f.want != "") {
					t.Errorf("%s(%q, %q) = %q, %v; want %q", f.what, tc.prefix, tc.key, got, ok, f.want)
				}
			}
			if got := TargetName(tc.key, tc.strip); got != tc.target {
				t.Errorf("TargetName(%q, %d) = %q, want %q", tc.key, tc.strip, got, tc.target)
			}
			// The short way gives the same target wherever it answers: for the key's own name,
			// and for its parent's when the key is a record of it.
			for _, name := range []string{tc.keyName, tc.nameOf} {
				if got, ok := TargetNameOf(tc.key, tc.strip, name); ok && got != tc.target {
					t.Errorf("TargetNameOf(%q, %d, %q) = %q, want %q", tc.key, tc.strip, name, got, tc.target)
				}
			}
		})
	}
}

// The writers' own keys read back as the names they were written for.
func TestAWritersKeyIsARecordOfItsName(t *testing.T) {
	key := Key("skydns", "*.apps.example.com", "o", "1.2.3.4")
	if n, ok := RecordName("skydns", key); !ok || n != "*.apps.example.com" {
		t.Errorf("RecordName(Key(...)) = %q %v", n, ok)
	}
	if n, ok := NameOf("skydns", key); !ok || n != "*.apps.example.com." {
		t.Errorf("NameOf(Key(...)) = %q %v", n, ok)
	}
	typed := SRV(10, 5, 443, "lb.example.net").Key("skydns", "_https._tcp.app.example.com", "o")
	if n, ok := NameOf("skydns", typed); !ok || n != "_https._tcp.app.example.com." {
		t.Errorf("NameOf(Typed.Key(...)) = %q %v", n, ok)
	}
}

func TestRecordIDs(t *testing.T) {
	for label, want := range map[string]bool{
		"3e6bee2e": true, "0011aabb": true, "1": true, "42": true, "x1": true, "x42": true,
		"3E6BEE2E": false, "3e6bee2": false, "3e6bee2e0": false, "x": false, "": false, "app": false, "a1": false, "xx1": false,
	} {
		if got := IsRecordID(label); got != want {
			t.Errorf("IsRecordID(%q) = %v, want %v", label, got, want)
		}
	}
}

func TestKeyNameIs(t *testing.T) {
	for _, tc := range []struct {
		key    string
		parent bool
		name   string
		want   bool
	}{
		{"/skydns/cluster/openmcp/eu1/app/3e6bee2e", true, "app.eu1.openmcp.cluster.", true},
		{"/skydns/cluster/openmcp/eu1/app/3e6bee2e", false, "3e6bee2e.app.eu1.openmcp.cluster.", true},
		{"/skydns/cluster/openmcp/eu1/app", true, "app.eu1.openmcp.cluster.", false},
		{"/skydns/cluster/openmcp/eu1/app", true, "eu1.openmcp.cluster.", true},
		{"/skydns/cluster/openmcp/eu1/app/sub/x", true, "app.eu1.openmcp.cluster.", false},
		{"/skydns/cluster/openmcp/eu1/app/x", true, "eu1.openmcp.cluster.", false},
		{"/skydns/cluster/openmcp/eu1//x", true, "eu1.openmcp.cluster.", false},
		{"/skydns/x", true, "skydns.", false},
		{"/skydns/x", false, "x.", true},
		{"skydns/cluster/x", true, "cluster.", false},
		{"/", true, ".", false},
		{"/", false, ".", false},
	} {
		if got := keyNameIs(tc.key, tc.parent, tc.name); got != tc.want {
			t.Errorf("keyNameIs(%q, %v, %q) = %v, want %v", tc.key, tc.parent, tc.name, got, tc.want)
		}
	}
}

// The key prefixes a server reads and watches for its zones.
func TestZonePrefixes(t *testing.T) {
	tests := []struct {
		name   string
		prefix string
		zones  []string
		want   []string
	}{
		{name: "a zone is the reversed path of its labels", prefix: "skydns", zones: []string{"openmcp.cluster."}, want: []string{"/skydns/cluster/openmcp/"}},
		{name: "the root zone is the whole prefix", prefix: "skydns", zones: []string{"."}, want: []string{"/skydns/"}},
		{name: "a zone inside another is covered by it", prefix: "/skydns", zones: []string{"eu1.openmcp.cluster.", "openmcp.cluster."}, want: []string{"/skydns/cluster/openmcp/"}},
		{name: "a sibling whose name starts alike is not inside", prefix: "skydns", zones: []string{"a.test.", "ab.test."}, want: []string{"/skydns/test/a/", "/skydns/test/ab/"}},
		{name: "reverse zones and a custom path", prefix: "/dns/x", zones: []string{"10.in-addr.arpa.", "openmcp.cluster."}, want: []string{"/dns/x/arpa/in-addr/10/", "/dns/x/cluster/openmcp/"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Outermost(ZoneDirs(tc.prefix, tc.zones)); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
