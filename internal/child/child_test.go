package child

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStopEndsAProcessThatIgnoresNothing(t *testing.T) {
	log := filepath.Join(t.TempDir(), "sleep.log")
	p, err := Start("sleep", log, exec.Command("sleep", "60"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Running() {
		t.Fatal("not running right after Start")
	}
	if !p.Stop(syscall.SIGTERM, 5*time.Second) {
		t.Error("Stop says a process that SIGTERM ends outlived the grace period")
	}
	if p.Running() {
		t.Fatal("still running after Stop")
	}
	if p.Err() == nil {
		t.Error("a process ended by SIGTERM reported success")
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(data), "\n"); !strings.HasPrefix(first, "==== ") || !strings.HasSuffix(first, " sleep 60") {
		t.Errorf("the log does not start with the time and the command line: %q", data)
	}
}

func TestStopKillsAProcessThatIgnoresSIGTERM(t *testing.T) {
	p, err := Start("stubborn", filepath.Join(t.TempDir(), "log"), exec.Command("sh", "-c", `trap "" TERM; echo ready; sleep 60`))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // for the trap to be set
	start := time.Now()
	if p.Stop(syscall.SIGTERM, 300*time.Millisecond) {
		t.Error("Stop says a process that ignores SIGTERM left within the grace period")
	}
	if p.Running() {
		t.Fatal("still running after Stop")
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("stopped after %s, before the grace period: SIGTERM was not ignored, the test proves nothing", took)
	}
}

func TestStartReportsAMissingBinary(t *testing.T) {
	_, err := Start("missing", filepath.Join(t.TempDir(), "log"), exec.Command("/nonexistent/binary"))
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("err = %v, want an error naming the process", err)
	}
}
