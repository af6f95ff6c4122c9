package index

import (
	"strings"
	"testing"
)

// askable is a fast path of the rule a zone copy keeps a path element by: the rule itself is
// what a question can reach, and the two must agree on every element, ASCII or not.
func TestAskableIsTheReachabilityRule(t *testing.T) {
	rule := func(el string) bool {
		return el != "" && !strings.ContainsAny(el, `.\ `) && strings.ToLower(el) == el
	}
	cases := []string{
		"", "app", "app-1", "_http", "_tcp", "*", "xn--bcher-kva", "3e6bee2e",
		"App", "APP", "a.b", `a\.b`, "a b", "a/b", "Z", "z", "@", "[", "`", "{",
		"bücher", "Bücher", "BÜCHER", "straße", "ǅ", "ǆ", "İ", "i̇", "ω", "Ω", "K", // Kelvin sign
		"ü.x", "ü x", `ü\`, "\xff", "a\xffb", "\xc3",
	}
	for _, el := range cases {
		if got, want := askable(el), rule(el); got != want {
			t.Errorf("askable(%q) = %v, the rule says %v", el, got, want)
		}
	}
}

func FuzzAskableIsTheReachabilityRule(f *testing.F) {
	for _, s := range []string{"app", "App", "bücher", "a.b", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, el string) {
		want := el != "" && !strings.ContainsAny(el, `.\ `) && strings.ToLower(el) == el
		if got := askable(el); got != want {
			t.Errorf("askable(%q) = %v, the rule says %v", el, got, want)
		}
	})
}
