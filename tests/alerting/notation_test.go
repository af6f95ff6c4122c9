package alerting

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// The recording's notation means to promtool what the recording saw: a run of one value lasts
// exactly as long, a missing scrape is no sample, and a stale marker ends the series at once
// (not five minutes later, as a missing sample would).
func TestRecordingNotationMeansWhatWasScraped(t *testing.T) {
	v := func(x float64) cell { return cell{set: true, v: x} }
	cells := []cell{v(1), v(1), v(1), v(0), {}, v(2), {stale: true}, {}, v(3)}
	const want = "1x2 0 _ 2 stale _ 3"
	if got := values(cells, len(cells)); got != want {
		t.Fatalf("values = %q, want %q", got, want)
	}
	promtool := testenv.ToolBinary(t, "promtool", "hack/build-promtool.sh")
	at := func(eval string, samples ...map[string]any) map[string]any {
		if samples == nil {
			samples = []map[string]any{}
		}
		return map[string]any{"expr": "s", "eval_time": eval, "exp_samples": samples}
	}
	one := func(x float64) map[string]any { return map[string]any{"labels": "s", "value": x} }
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "none.yaml"), []byte("groups: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(map[string]any{
		"rule_files": []string{"none.yaml"},
		// promtool loads the input up to each rule evaluation only: queried between two, a
		// series shows what the last evaluation saw.
		"evaluation_interval": "1s",
		"tests": []any{map[string]any{
			"interval":     "1s",
			"input_series": []any{map[string]string{"series": "s", "values": values(cells, len(cells))}},
			"promql_expr_test": []any{
				at("2s", one(1)), at("3s", one(0)), at("4s", one(0)), at("5s", one(2)),
				at("6s"), at("7s"), at("8s", one(3)),
			},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notation_test.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool, "test", "rules", "notation_test.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s\n%s", err, out, b)
	}
}

// A scrape every few steps sees each sampled step's value, and the stale marker of a target
// that stopped answering between two scrapes.
func TestDownsampleKeepsWhatAScrapeWouldSee(t *testing.T) {
	v := func(x float64) cell { return cell{set: true, v: x} }
	cells := []cell{v(1), v(2), v(3), {stale: true}, {}, {}, {}, v(4), v(5)}
	got := values(downsample(cells, len(cells), 3), 3)
	if want := "1 stale _"; got != want {
		t.Errorf("every 3: %q, want %q", got, want)
	}
	if got, want := values(downsample(cells, len(cells), 4), 3), "1 stale 5"; got != want {
		t.Errorf("every 4: %q, want %q", got, want)
	}
}
