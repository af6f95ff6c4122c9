package source

import "strings"

// DomainFilter limits names with external-dns semantics: a name matches a filter domain when
// it equals it or lies under it (a filter starting with "." matches only names under it); the
// exclusions win over the inclusions; no inclusions means every name is included.
type DomainFilter struct {
	include []string
	exclude []string
}

// NewDomainFilter builds a DomainFilter; domains are lower-cased, trailing dots and empty
// entries dropped.
func NewDomainFilter(include, exclude []string) DomainFilter {
	return DomainFilter{include: normalizeDomains(include), exclude: normalizeDomains(exclude)}
}

func normalizeDomains(ds []string) []string {
	var out []string
	for _, d := range ds {
		if d = normalizeName(d); d != "" && d != "." {
			out = append(out, d)
		}
	}
	return out
}

// Match reports whether name may be published.
func (f DomainFilter) Match(name string) bool {
	name = normalizeName(name)
	if len(f.include) > 0 && !matchDomains(f.include, name) {
		return false
	}
	return !matchDomains(f.exclude, name)
}

// Excludes reports whether name is in an excluded domain.
func (f DomainFilter) Excludes(name string) bool { return matchDomains(f.exclude, normalizeName(name)) }

// IsZero reports whether the filter lets every name through.
func (f DomainFilter) IsZero() bool { return len(f.include) == 0 && len(f.exclude) == 0 }

func matchDomains(filters []string, name string) bool {
	for _, f := range filters {
		if inDomain(name, f) {
			return true
		}
	}
	return false
}

// inDomain reports whether name equals domain or lies under it; a domain starting with "."
// matches only names under it.
func inDomain(name, domain string) bool {
	if strings.HasPrefix(domain, ".") {
		return strings.HasSuffix(name, domain) && len(name) > len(domain)
	}
	return name == domain || strings.HasSuffix(name, "."+domain)
}
