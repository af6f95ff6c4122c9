package source

import (
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

func claim(kind, name string, age int, host string, ttl uint32, targets ...string) Claim {
	return Claim{Name: host, Targets: targets, TTL: ttl, Source: record.ObjectRef{Kind: kind, Namespace: "app", Name: name},
		Created: t0.Add(time.Duration(age) * -time.Hour)}
}

func TestMerge(t *testing.T) {
	cases := []struct {
		name    string
		claims  []Claim
		want    []string // fmtEndpoints
		wantRej []string
	}{
		{name: "A targets of several objects are unioned and sorted",
			claims: []Claim{claim(KindHTTPRoute, "b", 0, "a.example.com", 0, "10.0.0.2", "10.0.0.3"), claim(KindIngress, "a", 0, "a.example.com", 0, "10.0.0.1", "10.0.0.2")},
			want:   []string{"a.example.com -> 10.0.0.1,10.0.0.2,10.0.0.3 ttl=0 from HTTPRoute/app/b,Ingress/app/a"}},
		{name: "A and AAAA targets are unioned",
			claims: []Claim{claim(KindHTTPRoute, "a", 0, "a.example.com", 0, "2001:db8::1"), claim(KindHTTPRoute, "b", 0, "a.example.com", 0, "10.0.0.1")},
			want:   []string{"a.example.com -> 10.0.0.1,2001:db8::1 ttl=0 from HTTPRoute/app/a,HTTPRoute/app/b"}},
		{name: "names are merged separately and sorted",
			claims: []Claim{claim(KindHTTPRoute, "a", 0, "z.example.com", 0, "10.0.0.1"), claim(KindHTTPRoute, "a", 0, "b.example.com", 0, "10.0.0.2")},
			want:   []string{"b.example.com -> 10.0.0.2 ttl=0 from HTTPRoute/app/a", "z.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/a"}},
		{name: "the same CNAME from two objects is one target from both",
			claims: []Claim{claim(KindHTTPRoute, "a", 0, "a.example.com", 0, "lb.example.net"), claim(KindIngress, "b", 1, "a.example.com", 0, "lb.example.net")},
			want:   []string{"a.example.com -> lb.example.net ttl=0 from HTTPRoute/app/a,Ingress/app/b"}},
		{name: "different CNAMEs: the oldest object's wins and the younger is reported",
			claims:  []Claim{claim(KindHTTPRoute, "young", 1, "a.example.com", 0, "one.example.net"), claim(KindHTTPRoute, "old", 5, "a.example.com", 0, "two.example.net")},
			want:    []string{"a.example.com -> two.example.net ttl=0 from HTTPRoute/app/old"},
			wantRej: []string{"HTTPRoute/app/young a.example.com Conflict"}},
		{name: "different CNAMEs of equal age: kind, namespace and name break the tie",
			claims:  []Claim{claim(KindIngress, "a", 0, "a.example.com", 0, "one.example.net"), claim(KindHTTPRoute, "z", 0, "a.example.com", 0, "two.example.net")},
			want:    []string{"a.example.com -> two.example.net ttl=0 from HTTPRoute/app/z"},
			wantRej: []string{"Ingress/app/a a.example.com Conflict"}},
		{name: "CNAME beside A: the A stays even when the CNAME is older",
			claims:  []Claim{claim(KindHTTPRoute, "cname", 9, "a.example.com", 0, "lb.example.net"), claim(KindIngress, "ip", 0, "a.example.com", 0, "10.0.0.1")},
			want:    []string{"a.example.com -> 10.0.0.1 ttl=0 from Ingress/app/ip"},
			wantRej: []string{"HTTPRoute/app/cname a.example.com Conflict"}},
		{name: "one object with an IP and a host name keeps the IP",
			claims:  []Claim{claim(KindHTTPRoute, "a", 0, "a.example.com", 0, "10.0.0.1", "lb.example.net")},
			want:    []string{"a.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/a"},
			wantRej: []string{"HTTPRoute/app/a a.example.com Conflict"}},
		{name: "one object with two host names keeps the first in sort order",
			claims:  []Claim{claim(KindHTTPRoute, "a", 0, "a.example.com", 0, "a.example.net", "b.example.net")},
			want:    []string{"a.example.com -> a.example.net ttl=0 from HTTPRoute/app/a"},
			wantRej: []string{"HTTPRoute/app/a a.example.com Conflict"}},
		{name: "the TTL is the smallest non-zero TTL of the winners",
			claims: []Claim{claim(KindHTTPRoute, "a", 0, "a.example.com", 300, "10.0.0.1"), claim(KindHTTPRoute, "b", 0, "a.example.com", 60, "10.0.0.2"),
				claim(KindHTTPRoute, "c", 0, "a.example.com", 0, "10.0.0.3"), claim(KindHTTPRoute, "d", 0, "a.example.com", 5, "lb.example.net")},
			want:    []string{"a.example.com -> 10.0.0.1,10.0.0.2,10.0.0.3 ttl=60 from HTTPRoute/app/a,HTTPRoute/app/b,HTTPRoute/app/c"},
			wantRej: []string{"HTTPRoute/app/d a.example.com Conflict"}},
		{name: "a claim without targets yields no endpoint",
			claims: []Claim{claim(KindHTTPRoute, "a", 0, "a.example.com", 0)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eps, rej := Merge(tc.claims)
			assertLines(t, "endpoints", fmtEndpoints(eps), tc.want)
			assertLines(t, "rejections", fmtRejections(rej), tc.wantRej)
		})
	}
}

func TestMergeConflictReasons(t *testing.T) {
	_, rej := Merge([]Claim{claim(KindHTTPRoute, "young", 1, "a.example.com", 0, "one.example.net"), claim(KindIngress, "old", 5, "a.example.com", 0, "two.example.net"),
		claim(KindHTTPRoute, "cname", 0, "b.example.com", 0, "lb.example.net"), claim(KindIngress, "ip", 0, "b.example.com", 0, "10.0.0.1")})
	want := []string{
		"HTTPRoute/app/cname: b.example.com: CNAME target lb.example.net conflicts with the A/AAAA records of the name (from Ingress/app/ip); a CNAME cannot share its name",
		"HTTPRoute/app/young: a.example.com: CNAME target one.example.net conflicts with CNAME target two.example.net (from Ingress/app/old, the oldest claim); a CNAME has one target",
	}
	var got []string
	for _, r := range rej {
		got = append(got, r.String())
	}
	assertLines(t, "reasons", got, want)
}
