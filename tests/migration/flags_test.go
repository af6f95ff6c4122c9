package migration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// flagTableHeading starts the section of docs/migration.md that maps every external-dns flag.
const flagTableHeading = "## Every external-dns flag, and what takes its place"

var (
	// helpFlag is a flag line of external-dns's --help (kingpin): "  --name=..." or
	// "  --[no-]name".
	helpFlag = regexp.MustCompile(`(?m)^  --(?:\[no-\])?([a-z0-9][a-z0-9-]*)`)
	// tableFlag is a flag named in a table's first column: "`--name`" or "`--name=value`".
	tableFlag = regexp.MustCompile("`--([a-z0-9][a-z0-9-]*)[=`]")
)

// laterFlags are flags of external-dns releases after the one the tests run (v0.21.0), by the
// release that added them: the flag table must name each (a migration from that release sets
// them), and may name them although the binary does not have them.
var laterFlags = map[string]string{
	"crd-registry-namespace":          "v0.22.0",
	"enable-legacy-annotation-prefix": "v0.23.0",
}

// externalDNSFlags runs `external-dns --help` and returns the names of its flags.
func externalDNSFlags(t *testing.T) []string {
	t.Helper()
	bin := testenv.ExternalDNSBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --help: %v\n%s", bin, err, out)
	}
	var flags []string
	for _, m := range helpFlag.FindAllStringSubmatch(string(out), -1) {
		flags = append(flags, m[1])
	}
	return flags
}

// flagTableFlags returns the flags named in the first column of the tables of the flag
// section of the migration guide.
func flagTableFlags(t *testing.T, guide string) []string {
	t.Helper()
	_, section, ok := strings.Cut(guide, "\n"+flagTableHeading+"\n")
	if !ok {
		t.Fatalf("docs/migration.md has no section %q", flagTableHeading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var flags []string
	for line := range strings.SplitSeq(section, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
		for _, m := range tableFlag.FindAllStringSubmatch(first, -1) {
			flags = append(flags, m[1])
		}
	}
	return flags
}

// TestMigrationFlagTableListsEveryExternalDNSFlag: every flag of the external-dns the tests run
// (v0.21.0, as `make test-binaries` builds it) and every one of laterFlags has a row in
// docs/migration.md's flag table, and every flag the table names is one of those (no stale or
// misspelt name).
func TestMigrationFlagTableListsEveryExternalDNSFlag(t *testing.T) {
	binary := externalDNSFlags(t)
	if len(binary) < 100 {
		t.Fatalf("read %d flags from external-dns --help, want its 180-odd: has the help's layout changed?", len(binary))
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join(root, "docs", "migration.md"))
	if err != nil {
		t.Fatal(err)
	}
	table := flagTableFlags(t, string(guide))
	for _, f := range binary {
		if !slices.Contains(table, f) {
			t.Errorf("external-dns flag --%s has no row in the flag table of docs/migration.md", f)
		}
	}
	for f, release := range laterFlags {
		if !slices.Contains(table, f) {
			t.Errorf("external-dns %s flag --%s has no row in the flag table of docs/migration.md", release, f)
		}
	}
	for _, f := range table {
		if _, later := laterFlags[f]; !slices.Contains(binary, f) && !later {
			t.Errorf("the flag table of docs/migration.md names --%s, which external-dns does not have", f)
		}
	}
	t.Logf("%d flags of external-dns, each named in the table", len(binary))
}
