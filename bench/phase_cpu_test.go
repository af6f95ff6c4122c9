package main

import (
	"os"
	"strings"
	"testing"
)

// TestShippedBlockIsTheZonesBlockWithTheBenchsListeners: phase A runs the shipped central
// Corefiles' zone block with the bench's stanza and listeners, and every other plugin as shipped.
func TestShippedBlockIsTheZonesBlockWithTheBenchsListeners(t *testing.T) {
	for _, tc := range []struct {
		file    string
		want    []string
		metrics bool
	}{
		{"../" + centralCorefile, []string{"errors", "gatewaydns {", "    endpoint X", "}"}, true},
		{"../" + overlayCorefile, []string{"errors", "gatewaydns {", "    endpoint X", "}", "loadbalance"}, true},
	} {
		text, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		body, metrics, err := shippedBlock(string(text), "gatewaydns {\n    endpoint X\n}")
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if got := strings.Split(body, "\n"); strings.Join(got, "|") != strings.Join(tc.want, "|") || metrics != tc.metrics {
			t.Errorf("%s: body %q, metrics %t; want %q, %t", tc.file, got, metrics, tc.want, tc.metrics)
		}
	}
}
