// Package txtregistry reads external-dns's TXT registry: the text records its default registry
// (--registry=txt) keeps beside each name it manages to say which owner holds the name. A writer
// migrating from external-dns uses it to find the records it takes over.
//
// It follows external-dns v0.21.0 (registry/mapper for the names, endpoint/labels for the
// text). Those packages are not imported: requiring the external-dns module pulls in a
// dependency graph that does not resolve (its ambassador dependency requires a module the
// proxy no longer serves), so the two small formats are restated here and pinned by tests
// against what a real external-dns writes (tests/migration/migration_test.go).
package txtregistry

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Config is how external-dns was told to name its registry records, and whose to take over.
type Config struct {
	// Owner is external-dns's --txt-owner-id whose records are taken over.
	Owner string
	// Prefix and Suffix are --txt-prefix and --txt-suffix (at most one of them); either may
	// hold the template %{record_type}.
	Prefix, Suffix string
	// WildcardReplacement is --txt-wildcard-replacement: what stands for a leading "*".
	WildcardReplacement string
}

// recordTemplate is the placeholder external-dns replaces with the record type in an affix.
const recordTemplate = "%{record_type}"

// Types are the record types whose registry names are read, lower-case as they appear in the
// names: the types a gatewaydns or external-dns source publishes (external-dns names a TXT
// endpoint's registry record "txt-...", though it cannot read that name back).
var Types = []string{"a", "aaaa", "cname", "txt", "srv", "mx"}

// Check reports a configuration external-dns itself refuses.
func (c Config) Check() error {
	if c.Owner == "" {
		return errors.New("txt-owner-id is empty")
	}
	if c.Prefix != "" && c.Suffix != "" {
		return errors.New("txt-prefix and txt-suffix are mutually exclusive, as in external-dns")
	}
	for _, s := range []string{c.Owner, c.Prefix, c.Suffix, c.WildcardReplacement} {
		if strings.ContainsAny(s, "/\"\\ ") {
			return fmt.Errorf("%q may not contain '/', quotes, backslashes or spaces", s)
		}
	}
	return nil
}

// Name is the name of the registry record for name's records of recordType (one of Types),
// as external-dns's AffixNameMapper.ToTXTName makes it: the type and the affix go into the
// first label ("web.eu1.example" -> "a-web.eu1.example", with --txt-prefix=p- "p-a-web...").
func (c Config) Name(name, recordType string) string {
	first, rest, dotted := strings.Cut(strings.ToLower(name), ".")
	recordType = strings.ToLower(recordType)
	prefix := strings.ReplaceAll(strings.ToLower(c.Prefix), recordTemplate, recordType)
	suffix := strings.ReplaceAll(strings.ToLower(c.Suffix), recordTemplate, recordType)
	if c.WildcardReplacement != "" && first == "*" {
		first = strings.ToLower(c.WildcardReplacement)
	}
	if !c.typeInAffix() {
		first = recordType + "-" + first
	}
	first = prefix + first + suffix
	if !dotted {
		return first
	}
	return first + "." + rest
}

// OldName is where external-dns before v0.12 kept the registry record of every type of name:
// at the name itself, or with the affix but without a type. (external-dns #4953: its coredns
// provider put that text into the record's own key, and a CNAME with text is answered as TXT.)
func (c Config) OldName(name string) string {
	first, rest, dotted := strings.Cut(strings.ToLower(name), ".")
	prefix := strings.ReplaceAll(strings.ToLower(c.Prefix), recordTemplate, "")
	suffix := strings.ReplaceAll(strings.ToLower(c.Suffix), recordTemplate, "")
	if c.WildcardReplacement != "" && first == "*" {
		first = strings.ToLower(c.WildcardReplacement)
	}
	first = prefix + first + suffix
	if !dotted {
		return first
	}
	return first + "." + rest
}

func (c Config) typeInAffix() bool {
	return strings.Contains(c.Prefix, recordTemplate) || strings.Contains(c.Suffix, recordTemplate)
}

// Entry is one registry name of a name: where external-dns keeps the record saying who owns
// the name's records of Type ("" for the old format, which covers every type).
type Entry struct {
	Name string
	Type string
}

// Names are the registry names of name: one per type of Types, and the old format's when it
// is not name itself.
func (c Config) Names(name string) []Entry {
	out := make([]Entry, 0, len(Types)+1)
	for _, t := range Types {
		out = append(out, Entry{Name: c.Name(name, t), Type: t})
	}
	if old := c.OldName(name); old != strings.ToLower(name) {
		out = append(out, Entry{Name: old})
	}
	return out
}

// EndpointNames are the names a registry record found at registryName may speak for: the
// name it is the typed registry name of, and the name whose old-format registry name it is.
// Each candidate is checked by mapping it forward again, so affixes with dots, templates and
// the wildcard replacement come out exact.
func (c Config) EndpointNames(registryName string) []string {
	registryName = strings.ToLower(registryName)
	var out []string
	add := func(n, recordType string) {
		if n == "" || strings.HasPrefix(n, ".") || strings.HasSuffix(n, ".") {
			return
		}
		for _, cand := range []string{n, c.unwild(n)} {
			if cand == "" {
				continue
			}
			mapped := c.OldName(cand)
			if recordType != "" {
				mapped = c.Name(cand, recordType)
			}
			if mapped == registryName && !slices.Contains(out, cand) {
				out = append(out, cand)
			}
		}
	}
	for _, t := range append(slices.Clone(Types), "") {
		prefix := strings.ReplaceAll(strings.ToLower(c.Prefix), recordTemplate, t)
		suffix := strings.ReplaceAll(strings.ToLower(c.Suffix), recordTemplate, t)
		for _, bare := range withoutAffix(registryName, prefix, suffix) {
			if t != "" && !c.typeInAffix() {
				var ok bool
				if bare, ok = strings.CutPrefix(bare, t+"-"); !ok {
					continue
				}
			}
			add(bare, t)
		}
	}
	return out
}

// withoutAffix is name with prefix removed from its start, or with suffix removed where it
// ends the first label of the original name: every place it could be.
func withoutAffix(name, prefix, suffix string) []string {
	if suffix == "" {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			return []string{rest}
		}
		return nil
	}
	var out []string
	for i := 0; ; {
		j := strings.Index(name[i:], suffix)
		if j < 0 {
			return out
		}
		at := i + j
		end := at + len(suffix)
		if end == len(name) || name[end] == '.' {
			out = append(out, name[:at]+name[end:])
		}
		i = at + 1
	}
}

// unwild turns a first label equal to the wildcard replacement back into "*" ("" when it is not).
func (c Config) unwild(name string) string {
	first, rest, dotted := strings.Cut(name, ".")
	if c.WildcardReplacement == "" || first != strings.ToLower(c.WildcardReplacement) {
		return ""
	}
	if !dotted {
		return "*"
	}
	return "*." + rest
}

// ErrNotRegistry is text that is not an external-dns registry record.
var ErrNotRegistry = errors.New("not an external-dns registry record")

// Labels parses a registry record's text as external-dns's NewLabelsFromStringPlain does:
// "heritage=external-dns,external-dns/owner=eu1,external-dns/resource=ingress/ns/web", quotes
// around it dropped. The heritage must be external-dns. Encrypted text (--txt-encrypt-enabled)
// does not parse: such records are never taken over.
func Labels(text string) (map[string]string, error) {
	text = strings.Trim(text, "\"")
	labels := make(map[string]string)
	heritage := false
	for token := range strings.SplitSeq(text, ",") {
		key, val, ok := strings.Cut(token, "=")
		if !ok || strings.Contains(val, "=") {
			continue
		}
		if key == "heritage" {
			if val != "external-dns" {
				return nil, ErrNotRegistry
			}
			heritage = true
			continue
		}
		if k, ok := strings.CutPrefix(key, "external-dns/"); ok {
			labels[k] = val
		}
	}
	if !heritage {
		return nil, ErrNotRegistry
	}
	return labels, nil
}

// OwnerOf is the owner a registry record's text names; ok is false for text that is not a
// registry record.
func OwnerOf(text string) (owner string, ok bool) {
	l, err := Labels(text)
	if err != nil {
		return "", false
	}
	return l["owner"], true
}
