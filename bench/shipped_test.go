package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// writeDeploy writes a base Deployment and chart values with the given limits under a new root.
func writeDeploy(t *testing.T, baseLimit, baseGo, chartLimit, chartGo, readme string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		baseDeployment: `apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
        - name: coredns
          resources:
            limits:
              memory: ` + baseLimit + `
          env:
            - name: GOMEMLIMIT
              value: ` + baseGo + "\n",
		chartValues:  "resources:\n  limits:\n    memory: " + chartLimit + "\ngoMemLimit: " + chartGo + "\n",
		deployReadme: readme,
	}
	for name, text := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestShippedMemoryIsWhatTheBaseAndTheChartBothShip(t *testing.T) {
	tests := []struct {
		name                              string
		baseLimit, baseGo, chartLim, chGo string
		want                              shippedMemory
		wantErr                           string
	}{
		{"agreeing", "448Mi", "320MiB", "448Mi", "320MiB", shippedMemory{limit: 448 << 20, limitText: "448Mi", goMemLimit: "320MiB"}, ""},
		{"limits differ", "448Mi", "320MiB", "512Mi", "320MiB", shippedMemory{}, "deploy/chart/values.yaml ships 512Mi"},
		{"GOMEMLIMITs differ", "448Mi", "320MiB", "448Mi", "350MiB", shippedMemory{}, "350MiB"},
		{"no GOMEMLIMIT in the base", "448Mi", "", "448Mi", "320MiB", shippedMemory{}, "no GOMEMLIMIT"},
		{"no limit in the chart", "448Mi", "320MiB", "", "320MiB", shippedMemory{}, "no memory limit"},
	}
	for _, tt := range tests {
		root := writeDeploy(t, tt.baseLimit, tt.baseGo, tt.chartLim, tt.chGo, "")
		got, err := readShippedMemory(root)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want one saying %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}

func TestTheRepositoryShipsOneLimitAndTheREADMESizesAPodThatDoesBoth(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	m, err := readShippedMemory(root)
	if err != nil {
		t.Fatal(err)
	}
	mib, err := readmeMiB(root, podReadmeRow)
	if err != nil {
		t.Fatal(err)
	}
	// The table sizes the pod within the limit it ships; a figure above it says the limit is wrong.
	if mib <= 0 || mib > mb(m.limit) {
		t.Errorf("deploy/README.md sizes a pod that does both at %.0f MiB, the shipped limit is %s", mib, m.limitText)
	}
}

func TestReadmeMiBReadsTheRowByItsLabel(t *testing.T) {
	tests := []struct {
		name, readme string
		want         float64
		wantErr      string
	}{
		{"found", "| | MiB |\n|---|---|\n| idle | 62.6 |\n| " + podReadmeRow + ": peak RSS | 410 |\n", 410, ""},
		{"not a number", "| " + podReadmeRow + " | about 400 |\n", 0, `holds " about 400 "`},
		{"missing", "| idle | 62.6 |\n", 0, "no row"},
		{"in a table of three columns", "| " + podReadmeRow + " | 410 | 420 |\n", 0, "no row"},
	}
	for _, tt := range tests {
		root := writeDeploy(t, "448Mi", "320MiB", "448Mi", "320MiB", tt.readme)
		got, err := readmeMiB(root, podReadmeRow)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want one saying %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}
