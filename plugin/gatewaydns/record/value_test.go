package record

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/etcd/msg"
)

func TestKeyIsDeterministicAndShaped(t *testing.T) {
	k1 := Key("skydns", "App.Example.COM.", "c1", "10.0.0.1")
	k2 := Key("/skydns/", "app.example.com", "c1", "10.0.0.1")
	if k1 != k2 {
		t.Fatalf("same owner, name and target gave %q and %q", k1, k2)
	}
	if !regexp.MustCompile(`^/skydns/com/example/app/[0-9a-f]{8}$`).MatchString(k1) {
		t.Fatalf("key %q does not have the external-dns layout", k1)
	}
	if Key("skydns", "app.example.com", "c2", "10.0.0.1") == k1 {
		t.Fatal("two owners got the same key for one target")
	}
	if Key("skydns", "app.example.com", "c1", "10.0.0.2") == k1 {
		t.Fatal("two targets got the same key")
	}
}

func TestKeyOfWildcard(t *testing.T) {
	k := Key("skydns", "*.a.b", "c1", "lb.example.net")
	if !strings.HasPrefix(k, "/skydns/b/a/*/") || len(k) != len("/skydns/b/a/*/")+8 {
		t.Fatalf("wildcard key = %q", k)
	}
}

func TestNamePathMatchesStockPath(t *testing.T) {
	for _, n := range []string{"a.b.example.com", "*.apps.example.com", "x"} {
		if got, want := NamePath("skydns", n), msg.Path(n, "skydns"); got != want {
			t.Errorf("NamePath(%q) = %q, msg.Path = %q", n, got, want)
		}
	}
	if got := NamePath("dns/zone", "a.b"); got != "/dns/zone/b/a" {
		t.Errorf("multi-element prefix: %q", got)
	}
}

func TestValueIsReadByStockReaders(t *testing.T) {
	ep := Endpoint{Name: "app.example.com", Targets: []string{"10.0.0.1"}, TTL: 60,
		Sources: []ObjectRef{{Kind: "HTTPRoute", Namespace: "ns", Name: "web"}}}
	b := NewValue(ep, "prod.c1", "10.0.0.1").Encode()
	want := `{"host":"10.0.0.1","ttl":60,"targetstrip":1,"owner":"prod.c1","sources":["HTTPRoute/ns/web"]}`
	if string(b) != want {
		t.Fatalf("value = %s\nwant    %s", b, want)
	}
	var s msg.Service // what the stock etcd plugin decodes
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Host != "10.0.0.1" || s.TTL != 60 || s.TargetStrip != 1 {
		t.Fatalf("stock reader sees %+v", s)
	}
	if _, err := Decode("/skydns/com/example/app/01234567", b); err != nil {
		t.Fatalf("our serve path rejects our value: %v", err)
	}
}

func TestValueEqualAndParse(t *testing.T) {
	ep := Endpoint{Name: "a.b", Targets: []string{"lb.example.net"}}
	v := NewValue(ep, "o", "lb.example.net")
	// external-dns writes fields in another order and an explicit empty text.
	p, err := ParseValue([]byte(`{"owner":"o","text":"","targetstrip":1,"host":"lb.example.net"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !v.Equal(p) {
		t.Fatalf("%+v != %+v", v, p)
	}
	p.TTL = 30
	if v.Equal(p) {
		t.Fatal("a changed ttl compares equal")
	}
	w := v
	w.Sources = []string{"Ingress/ns/x"}
	if v.Equal(w) {
		t.Fatal("changed sources compare equal")
	}
}

func TestOwnerOf(t *testing.T) {
	tests := map[string]string{
		`{"host":"1.2.3.4","owner":"c1"}`: "c1",
		`{"host":"1.2.3.4"}`:              "",
		`not json`:                        "",
		`{"owner":7}`:                     "",
		``:                                "",
	}
	for in, want := range tests {
		if got := OwnerOf([]byte(in)); got != want {
			t.Errorf("OwnerOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func routes(n int) []ObjectRef {
	refs := make([]ObjectRef, n)
	for i := range refs {
		refs[i] = ObjectRef{Kind: "HTTPRoute", Namespace: "ns", Name: fmt.Sprintf("r%04d", i)}
	}
	return refs
}

func TestValueListsAFewSourcesAndCountsTheRest(t *testing.T) {
	for _, tc := range []struct {
		behaviour string
		sources   int
		listed    int
		count     int
	}{
		{"no source: nothing listed", 0, 0, 0},
		{"sources that fit are listed, with no count", MaxSources, MaxSources, 0},
		{"a thousand routes: the first few listed, and the count", 1000, MaxSources, 1000},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			v := NewValue(Endpoint{Name: "app.example.com", Targets: []string{"10.0.0.1"}, Sources: routes(tc.sources)}, "c1", "10.0.0.1")
			if len(v.Sources) != tc.listed || v.SourceCount != tc.count {
				t.Fatalf("listed %d, count %d; want %d, %d", len(v.Sources), v.SourceCount, tc.listed, tc.count)
			}
			if n := len(v.Encode()); n > 300 {
				t.Fatalf("value of %d bytes: %s", n, v.Encode())
			}
		})
	}
}

func TestValueIsCurrentUnlessItsAnswerOrListedSourcesChange(t *testing.T) {
	value := func(sources []ObjectRef, host string) Value {
		return NewValue(Endpoint{Name: "app.example.com", TTL: 30, Targets: []string{host}, Sources: sources}, "c1", host)
	}
	thousand := routes(1000)
	for _, tc := range []struct {
		behaviour  string
		have, want Value
		current    bool
	}{
		{"the same value", value(thousand, "10.0.0.1"), value(thousand, "10.0.0.1"), true},
		{"a route joins beyond the listed ones", value(thousand, "10.0.0.1"), value(routes(1001), "10.0.0.1"), true},
		{"a route beyond the listed ones leaves", value(thousand, "10.0.0.1"), value(thousand[:999], "10.0.0.1"), true},
		{"a listed route leaves", value(thousand, "10.0.0.1"), value(thousand[1:], "10.0.0.1"), false},
		{"the list is no longer cut short", value(thousand, "10.0.0.1"), value(thousand[:MaxSources], "10.0.0.1"), false},
		{"the list becomes cut short", value(thousand[:MaxSources], "10.0.0.1"), value(thousand[:MaxSources+1], "10.0.0.1"), false},
		{"a route joins a short list", value(thousand[:1], "10.0.0.1"), value(thousand[:2], "10.0.0.1"), false},
		{"another host", value(thousand, "10.0.0.1"), value(thousand, "10.0.0.2"), false},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			if got := tc.have.Current(tc.want); got != tc.current {
				t.Fatalf("Current = %v, want %v", got, tc.current)
			}
		})
	}
}
