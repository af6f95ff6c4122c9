package txtregistry

import (
	"slices"
	"testing"
)

// The names external-dns v0.21.0's AffixNameMapper.ToTXTName gives (its mapper_test.go cases
// that apply to the types read here).
func TestNameIsWhereExternalDNSKeepsTheRegistryRecord(t *testing.T) {
	for _, tc := range []struct {
		cfg        Config
		name, typ  string
		registered string
	}{
		{Config{}, "foo.example.com", "a", "a-foo.example.com"},
		{Config{}, "foo.example.com", "AAAA", "aaaa-foo.example.com"},
		{Config{}, "foo.example.com", "cname", "cname-foo.example.com"},
		{Config{}, "foo.example.com", "srv", "srv-foo.example.com"},
		{Config{}, "foo.example.com", "mx", "mx-foo.example.com"},
		{Config{Prefix: "%{record_type}-"}, "foo.example.com", "a", "a-foo.example.com"},
		{Config{Suffix: "-%{record_type}"}, "foo.example.com", "cname", "foo-cname.example.com"},
		{Config{Prefix: "txt-", WildcardReplacement: "wild"}, "*.example.com", "a", "txt-a-wild.example.com"},
		{Config{Prefix: "txt-", WildcardReplacement: "wild"}, "*.example.com", "mx", "txt-mx-wild.example.com"},
		{Config{Prefix: "foo"}, "example.com", "a", "fooa-example.com"},
		{Config{Suffix: "foo"}, "example", "aaaa", "aaaa-examplefoo"},
		{Config{Suffix: "foo"}, "example.com", "aaaa", "aaaa-examplefoo.com"},
		{Config{Prefix: "foo-"}, "example.com", "a", "foo-a-example.com"},
		{Config{Suffix: "-foo"}, "example.com", "cname", "cname-example-foo.com"},
		{Config{Prefix: "foo."}, "example.com", "cname", "foo.cname-example.com"},
		{Config{Suffix: ".foo"}, "example.com", "cname", "cname-example.foo.com"},
		{Config{Prefix: "foo.bar."}, "example.com", "cname", "foo.bar.cname-example.com"},
		{Config{Suffix: ".foo.bar.test"}, "example.com", "cname", "cname-example.foo.bar.test.com"},
		{Config{Prefix: "%{record_type}-foo"}, "example.com", "a", "a-fooexample.com"},
		{Config{Suffix: "foo-%{record_type}"}, "example.com", "a", "examplefoo-a.com"},
		{Config{Prefix: "%{record_type}foo."}, "example.com", "cname", "cnamefoo.example.com"},
		{Config{Suffix: ".foo%{record_type}"}, "example.com", "a", "example.fooa.com"},
		{Config{Prefix: "bar.%{record_type}.foo."}, "example.com", "cname", "bar.cname.foo.example.com"},
		{Config{Suffix: ".foo%{record_type}.bar"}, "example.com", "a", "example.fooa.bar.com"},
	} {
		if got := tc.cfg.Name(tc.name, tc.typ); got != tc.registered {
			t.Errorf("%+v: Name(%q, %s) = %q, want %q", tc.cfg, tc.name, tc.typ, got, tc.registered)
		}
		// And back: the registry name speaks for the name.
		if got := tc.cfg.EndpointNames(tc.registered); !slices.Contains(got, tc.name) {
			t.Errorf("%+v: EndpointNames(%q) = %q, want it to hold %q", tc.cfg, tc.registered, got, tc.name)
		}
	}
}

func TestEndpointNamesOfOldFormatAndUnrelatedNames(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		in   string
		want []string
	}{
		// The old format sits at the name itself: a registry text found there speaks for it.
		{Config{}, "web.eu1.example", []string{"web.eu1.example"}},
		// A typed name speaks for the name and, as an old-format name, for itself.
		{Config{}, "a-web.eu1.example", []string{"web.eu1.example", "a-web.eu1.example"}},
		{Config{Prefix: "p-"}, "p-web.eu1.example", []string{"web.eu1.example"}},
		{Config{Prefix: "p-"}, "other.eu1.example", nil},
		{Config{Prefix: "txt-", WildcardReplacement: "wild"}, "txt-a-wild.example.com",
			[]string{"wild.example.com", "*.example.com", "a-wild.example.com"}},
	} {
		if got := tc.cfg.EndpointNames(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: EndpointNames(%q) = %q, want %q", tc.cfg, tc.in, got, tc.want)
		}
	}
}

func TestNamesListEveryTypeAndTheAffixedOldFormat(t *testing.T) {
	got := Config{}.Names("web.eu1.example")
	var names []string
	for _, e := range got {
		names = append(names, e.Name)
	}
	want := []string{"a-web.eu1.example", "aaaa-web.eu1.example", "cname-web.eu1.example",
		"txt-web.eu1.example", "srv-web.eu1.example", "mx-web.eu1.example"}
	if !slices.Equal(names, want) {
		t.Errorf("Names without affix = %q, want %q (the old format is the name itself, read anyway)", names, want)
	}
	got = Config{Prefix: "reg."}.Names("web.eu1.example")
	if last := got[len(got)-1]; last != (Entry{Name: "reg.web.eu1.example"}) {
		t.Errorf("with a prefix the old-format name is %+v, want reg.web.eu1.example without type", last)
	}
}

func TestLabelsParseExternalDNSTextOnly(t *testing.T) {
	for _, tc := range []struct {
		text  string
		owner string
		ok    bool
	}{
		{`"heritage=external-dns,external-dns/owner=eu1,external-dns/resource=httproute/shop/web"`, "eu1", true},
		{`heritage=external-dns,external-dns/owner=eu1`, "eu1", true},
		{`"heritage=external-dns,external-dns/resource=ingress/a/b"`, "", true},
		{`"heritage=other,external-dns/owner=eu1"`, "", false},
		{`"external-dns/owner=eu1"`, "", false},
		{`v=spf1 include:example.com ~all`, "", false},
		// Encrypted registry text (--txt-encrypt-enabled) is opaque: never taken over.
		{`"c2VjcmV0Cg==,bm9uY2U="`, "", false},
		// A token with two '=' is skipped, as external-dns does.
		{`"heritage=external-dns,external-dns/owner=a=b"`, "", true},
	} {
		owner, ok := OwnerOf(tc.text)
		if owner != tc.owner || ok != tc.ok {
			t.Errorf("OwnerOf(%s) = %q, %v; want %q, %v", tc.text, owner, ok, tc.owner, tc.ok)
		}
	}
}

func TestCheckRefusesWhatExternalDNSRefuses(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{Owner: "eu1"}, true},
		{Config{Owner: "eu1", Prefix: "p-"}, true},
		{Config{}, false},
		{Config{Owner: "eu1", Prefix: "p-", Suffix: "-s"}, false},
		{Config{Owner: "eu/1"}, false},
	} {
		if err := tc.cfg.Check(); (err == nil) != tc.ok {
			t.Errorf("Check(%+v) = %v, want ok=%v", tc.cfg, err, tc.ok)
		}
	}
}
