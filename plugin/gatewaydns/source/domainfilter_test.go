package source

import "testing"

func TestDomainFilter(t *testing.T) {
	cases := []struct {
		name             string
		include, exclude []string
		host             string
		want             bool
	}{
		{"no filter matches every name", nil, nil, "anything.example.org", true},
		{"the filter domain itself matches", []string{"example.com"}, nil, "example.com", true},
		{"a subdomain matches", []string{"example.com"}, nil, "a.b.example.com", true},
		{"a wildcard under the domain matches", []string{"example.com"}, nil, "*.example.com", true},
		{"a name merely ending in the domain does not match", []string{"example.com"}, nil, "badexample.com", false},
		{"another domain does not match", []string{"example.com"}, nil, "example.org", false},
		{"any of several domains matches", []string{"example.org", "example.com"}, nil, "a.example.com", true},
		{"a leading dot matches only subdomains", []string{".example.com"}, nil, "example.com", false},
		{"a leading dot matches subdomains", []string{".example.com"}, nil, "a.example.com", true},
		{"filters are normalized", []string{"Example.COM."}, nil, "A.example.com.", true},
		{"an exclusion wins over an inclusion", []string{"example.com"}, []string{"internal.example.com"}, "db.internal.example.com", false},
		{"an exclusion leaves the rest included", []string{"example.com"}, []string{"internal.example.com"}, "www.example.com", true},
		{"an exclusion alone excludes", nil, []string{"example.com"}, "example.com", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewDomainFilter(tc.include, tc.exclude).Match(tc.host); got != tc.want {
				t.Errorf("Match(%q) = %v, want %v", tc.host, got, tc.want)
			}
		})
	}
	if !(DomainFilter{}).IsZero() || NewDomainFilter([]string{"", "."}, nil).IsZero() != true || NewDomainFilter([]string{"a.com"}, nil).IsZero() {
		t.Error("IsZero is wrong")
	}
}
