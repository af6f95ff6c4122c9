package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gatewaydns/gatewaydns/internal/docblocks"
)

// The README's `make bench BENCHFLAGS="..."` lines are flags the harness takes: each parses,
// phases and counts included (the runs themselves take up to 22 minutes, outside make test).
func TestREADMEBenchFlagsParse(t *testing.T) {
	blocks, err := docblocks.Read(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	flags := regexp.MustCompile(`^make bench BENCHFLAGS="([^"]*)"`)
	n := 0
	for _, b := range blocks {
		for _, l := range b.Lines {
			m := flags.FindStringSubmatch(strings.TrimSpace(l))
			if m == nil {
				continue
			}
			n++
			if _, err := parseFlags(strings.Fields(m[1])); err != nil {
				t.Errorf("%s: BENCHFLAGS=%q: %v", b.Where(), m[1], err)
			}
		}
	}
	if n == 0 {
		t.Error("the README shows no make bench BENCHFLAGS=... line")
	}
	t.Logf("%d BENCHFLAGS lines parse", n)
}
