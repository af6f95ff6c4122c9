package publish

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// externalDNSSources returns the values external-dns accepts for --source, read from its flag
// definitions (the allowedSources list of pkg/apis/externaldns/types.go, which its --source
// flag's EnumsVar takes).
func externalDNSSources(t *testing.T) []string {
	t.Helper()
	dir, err := testenv.ExternalDNSModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "pkg", "apis", "externaldns", "types.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`Flag\("source",[^\n]*EnumsVar\(&cfg\.Sources, allowedSources\.\.\.\)`).Match(src) {
		t.Fatal("external-dns's --source flag no longer takes its values from allowedSources: read them from where it does")
	}
	list := regexp.MustCompile(`(?s)var allowedSources = \[\]string\{(.*?)\n\}`).FindSubmatch(src)
	if list == nil {
		t.Fatal("no allowedSources list in external-dns's types.go")
	}
	var out []string
	for _, m := range regexp.MustCompile(`"([^"]+)"`).FindAllSubmatch(list[1], -1) {
		out = append(out, string(m[1]))
	}
	if len(out) < 10 {
		t.Fatalf("read only %v from allowedSources", out)
	}
	return out
}

// sourceTable returns the rows of docs/migration.md's --source table: for each external-dns
// --source value named in a row's first column, the row's second column.
func sourceTable(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "migration.md"))
	if err != nil {
		t.Fatal(err)
	}
	const header = "| external-dns `--source` | gatewaydns `sources` | notes |"
	_, table, ok := strings.Cut(string(doc), header+"\n")
	if !ok {
		t.Fatalf("docs/migration.md has no table headed %s", header)
	}
	rows := map[string]string{}
	code := regexp.MustCompile("`([^`]+)`")
	for line := range strings.Lines(table) {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cols := strings.Split(line, "|")
		if len(cols) < 4 || strings.HasPrefix(cols[1], "---") {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(cols[1], -1) {
			rows[m[1]] = strings.TrimSpace(cols[2])
		}
	}
	return rows
}

// docs/migration.md maps every external-dns --source value: to a gatewaydns sources name that
// the stanza accepts and that reads the same objects, or to "no counterpart" (with why in the
// row's notes). A source added to external-dns, or renamed, fails this until the table says
// what becomes of it.
func TestMigrationDocMapsEverySource(t *testing.T) {
	sources, rows := externalDNSSources(t), sourceTable(t)
	for _, s := range sources {
		to, ok := rows[s]
		switch {
		case !ok:
			t.Errorf("docs/migration.md's --source table does not map external-dns's --source=%s", s)
		case to == "no counterpart":
			if _, ok := sourceKinds[s]; ok {
				t.Errorf("--source=%s: the table says no counterpart, but sources %s is accepted", s, s)
			}
		case to == "the same names" || to == "`"+s+"`":
			if _, ok := sourceKinds[s]; !ok {
				t.Errorf("--source=%s: the table maps it to sources %s, which the stanza refuses", s, s)
			}
		default:
			t.Errorf("--source=%s: the table maps it to %q, neither a sources name nor \"no counterpart\"", s, to)
		}
	}
	for s := range rows {
		if !slices.Contains(sources, s) {
			t.Errorf("docs/migration.md's --source table names %s, which external-dns v0.21.0 does not accept", s)
		}
	}
	for s := range sourceKinds {
		if !slices.Contains(sources, s) {
			t.Errorf("sources %s is not an external-dns --source value, though sources are named after them", s)
		}
	}
}
