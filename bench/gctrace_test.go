package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLiveHeaps(t *testing.T) {
	log := `[INFO] plugin/ready: Plugins not ready: "gatewaydns"
gc 1 @0.020s 3%: 0.021+1.2+0.003 ms clock, 0.042+0.5/1.1/0+0.006 ms cpu, 3->3->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 9 @5.329s 8%: 0.1+210+0.02 ms clock, 0.2+12/200/0+0.04 ms cpu, 267->267->265 MB, 267 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 10 @7.548s 9%: 0.1+300+0.02 ms clock, 0.2+12/200/0+0.04 ms cpu, 528->532->238 MB, 532 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 11 @8.2s 9%: 0.1+300+0.02 ms clock, 0.2+12/200/0+0.04 ms cpu, 470->484->223 MB, 478 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)
`
	file := filepath.Join(t.TempDir(), "coredns.log")
	if err := os.WriteFile(file, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	largest, last, err := liveHeaps(file)
	if err != nil || largest != 265<<20 || last != 223<<20 {
		t.Errorf("liveHeaps = %d MB, %d MB, %v; want 265 MB, 223 MB", largest>>20, last>>20, err)
	}
	if err := os.WriteFile(file, []byte("no collections\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := liveHeaps(file); err == nil {
		t.Error("a log without gctrace lines gave no error")
	}
}

func TestParseGCLineReadsTheTimeAndTheThreeHeaps(t *testing.T) {
	tests := []struct {
		line string
		want gcCycle
		ok   bool
	}{
		{"gc 10 @7.548s 9%: 0.1+300+0.02 ms clock, 0.2+12/200/0+0.04 ms cpu, 528->532->238 MB, 532 MB goal, 0 MB stacks, 0 MB globals, 2 P",
			gcCycle{at: 7548 * time.Millisecond, clock: 300120 * time.Microsecond, start: 528 << 20, end: 532 << 20, marked: 238 << 20}, true},
		{"gc 11 @8.2s 9%: 0.25+30+0.5 ms clock, 0.2+12/200/0+0.04 ms cpu, 470->484->223 MB, 478 MB goal, 2 P (forced)",
			gcCycle{at: 8200 * time.Millisecond, clock: 30750 * time.Microsecond, start: 470 << 20, end: 484 << 20, marked: 223 << 20}, true},
		{"gc 12 @9s 9%: 470->484->223 MB, 478 MB goal, 2 P",
			gcCycle{at: 9 * time.Second, start: 470 << 20, end: 484 << 20, marked: 223 << 20}, true},
		{`[INFO] plugin/ready: Plugins not ready: "gatewaydns"`, gcCycle{}, false},
		{"gc 3 @x 1%: no heap figures", gcCycle{}, false},
		{"gc 4 @1.0s 1%: 0.1 ms clock, 1->2 MB, 4 MB goal", gcCycle{}, false},
	}
	for _, tt := range tests {
		got, ok := parseGCLine(tt.line)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseGCLine(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}
