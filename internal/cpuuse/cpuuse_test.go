package cpuuse

import (
	"testing"
	"time"
)

// TestNowCountsWork: spinning for 50 ms of wall time costs this process CPU time, and sleeping
// next to nothing.
func TestNowCountsWork(t *testing.T) {
	start := Now()
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	spun := Now() - start
	if spun <= 0 {
		t.Fatalf("spinning used %s of CPU", spun)
	}
	start = Now()
	time.Sleep(50 * time.Millisecond)
	if slept := Now() - start; slept > spun {
		t.Errorf("sleeping used %s of CPU, spinning %s", slept, spun)
	}
}
