package docblocks

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Read finds fenced and indented blocks, an indented block inside a list item included, and
// takes neither a list item's continued text nor prose for one.
func TestReadFindsEveryCodeBlockAndNothingElse(t *testing.T) {
	doc := "# Title\n\nSome text.\n\n```sh\nmake demo\n$ dig x\nanswer\n```\n\n" +
		"    make image IMAGE=x\n    skopeo copy\n\n" +
		"1. **Step** text\n   continued text of the item\n\n   more text of the item\n\n" +
		"       kubectl kustomize dir |\n         kubectl apply -f -\n\n" +
		"~~~ corefile\n. {\n}\n~~~\n"
	f := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, b := range blocks {
		got = append(got, append([]string{b.Info}, b.Lines...))
	}
	want := [][]string{
		{"sh", "make demo", "$ dig x", "answer"},
		{"", "make image IMAGE=x", "skopeo copy"},
		{"", "kubectl kustomize dir |", "  kubectl apply -f -"},
		{"corefile", ". {", "}"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("blocks %q, want %q", got, want)
	}
	if steps := blocks[0].Steps(); len(steps) != 1 || steps[0].Command != "dig x" || !slices.Equal(steps[0].Output, []string{"answer"}) {
		t.Errorf("steps %+v, want dig x printing answer", steps)
	}
	if blocks[1].Steps() != nil {
		t.Error("a block without $ lines has steps")
	}
}

// What differs between runs is made equal, and nothing else.
func TestNormalizeKeepsAllButWhatVaries(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{";; ->>HEADER<<- opcode: QUERY, status: NXDOMAIN, id: 62450", ";; ->>HEADER<<- opcode: QUERY, status: NXDOMAIN, id: 1"},
		{"openmcp.cluster.\t30\tIN\tSOA\tns.dns.openmcp.cluster. hostmaster.openmcp.cluster. 14 7200 1800 86400 30",
			"openmcp.cluster. 30 IN SOA ns.dns.openmcp.cluster. hostmaster.openmcp.cluster. 9 7200 1800 86400 30"},
		{`x. 0 CH TXT "key=/skydns/cluster/openmcp/eu1/web/c08ca3ba" "owner=eu1" "revision=4" "seen=2026-11-28T14:24:40Z"`,
			`x. 0	CH	TXT	"key=/skydns/cluster/openmcp/eu1/web/5d1c0e2a" "owner=eu1" "revision=9" "seen=2027-01-01T00:00:00Z"`},
	} {
		if Normalize(tc.a) != Normalize(tc.b) {
			t.Errorf("%q and %q differ: %q, %q", tc.a, tc.b, Normalize(tc.a), Normalize(tc.b))
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"app.eu1.openmcp.cluster. 60 IN A 203.0.113.10", "app.eu1.openmcp.cluster. 300 IN A 203.0.113.10"},
		{`"owner=eu1"`, `"owner=us1"`},
		{"openmcp.cluster. 30 IN SOA ns. h. 14 7200 1800 86400 30", "openmcp.cluster. 30 IN SOA ns. h. 14 7200 1800 86400 60"},
	} {
		if Normalize(tc.a) == Normalize(tc.b) {
			t.Errorf("%q and %q made equal", tc.a, tc.b)
		}
	}
}
