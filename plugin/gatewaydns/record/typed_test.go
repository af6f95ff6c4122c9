package record

import (
	"slices"
	"testing"
)

func TestTypedCanonicalFormAndKey(t *testing.T) {
	for _, tc := range []struct {
		r    Typed
		want string
	}{
		{TXT(`v=spf1 "quoted" -all`), `TXT "v=spf1 \"quoted\" -all"`},
		{SRV(10, 5, 443, "LB.Example.NET."), "SRV 10 5 443 lb.example.net"},
		{MX(0, "mail.example.net."), "MX 0 mail.example.net"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
	// The suffix is a pure function of owner and canonical form: a resync or a restart
	// rewrites nothing. Pinned, so that a change of the form shows up here.
	if got := SRV(10, 5, 443, "lb.example.net").Key("skydns", "_https._tcp.app.example.com", "c1"); got != "/skydns/com/example/app/_tcp/_https/"+SRV(10, 5, 443, "lb.example.net").KeySuffix("c1") {
		t.Errorf("Key = %q", got)
	}
	if a, b := TXT("x").KeySuffix("c1"), TXT("x").KeySuffix("c2"); a == b {
		t.Error("two owners share a TXT key")
	}
	if a, b := TXT("10.0.0.1").KeySuffix("c1"), KeySuffix("c1", "10.0.0.1"); a == b {
		t.Error("a TXT record shares the key of an A record")
	}
	got := SortTyped([]Typed{MX(10, "b.example"), TXT("z"), MX(10, "b.example."), SRV(1, 1, 1, "a.example")})
	want := []Typed{MX(10, "b.example"), SRV(1, 1, 1, "a.example"), TXT("z")}
	if !slices.Equal(got, want) {
		t.Errorf("SortTyped = %v, want %v", got, want)
	}
}

func TestKindOfTellsTargetsFromCNAMEs(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  AnswerKind
	}{
		{`{"host":"10.0.0.1"}`, Address},
		{`{"host":"10.0.0.1","port":443}`, Address},
		{`{"host":"lb.example.net"}`, CNAME},
		{`{"host":"lb.example.net","priority":10}`, CNAME},
		{`{"host":"lb.example.net","port":-1}`, CNAME},
		{`{"host":"lb.example.net","port":443}`, Target},
		{`{"host":"mail.example.net","mail":true}`, Target},
		{`{"text":"hello"}`, Text},
		{`{"host":"lb.example.net","text":"hello","port":443}`, Text},
	} {
		v, err := ParseValue([]byte(tc.value))
		if err != nil {
			t.Fatal(err)
		}
		if got := KindOf(&v.Service); got != tc.want {
			t.Errorf("KindOf(%s) = %d, want %d", tc.value, got, tc.want)
		}
	}
}

// The suffixes etcd holds were written by earlier releases: a suffix that changed would make a
// writer delete and rewrite every key it owns. Pinned to the values of sha256(owner NUL form).
func TestKeySuffixesAreTheOnesEtcdHolds(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{KeySuffix("c1", "10.0.0.1"), "474dfdc1"},
		{KeySuffix("c1", "LB.Example.NET"), "47f98406"}, // a target is lower-cased
		{TXT("x").KeySuffix("c1"), "b1c058ac"},
		{SRV(10, 5, 443, "lb.example.net").KeySuffix("c1"), "02c5d1ce"},
	} {
		if tc.got != tc.want {
			t.Errorf("key suffix %s, want %s", tc.got, tc.want)
		}
	}
}
