package main

import (
	"os"
	"testing"
	"time"
)

func TestRSSAndHeapBetweenKeepToTheirWindow(t *testing.T) {
	samples := []rssSample{{at: time.Second, rss: 10}, {at: 2 * time.Second, rss: 30}, {at: 3 * time.Second, rss: 20}, {at: 4 * time.Second, rss: 90}}
	cycles := []gcCycle{
		{at: time.Second, start: 8, end: 9, marked: 5},
		{at: 2 * time.Second, start: 40, end: 44, marked: 7},
		{at: 3 * time.Second, start: 20, end: 21, marked: 6},
		{at: 4 * time.Second, start: 99, end: 99, marked: 50},
	}
	tests := []struct {
		name                   string
		from, to               time.Duration
		rssMid, rssMax         int64
		live, liveMax, heapMax int64
		n                      int
	}{
		{"the middle", 2 * time.Second, 3 * time.Second, 25, 30, 6, 7, 44, 2},
		{"all", 0, time.Minute, 25, 90, 6, 50, 99, 4},
		{"nothing in it", 5 * time.Second, time.Minute, 0, 0, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		mid, largest, n := rssBetween(samples, tt.from, tt.to)
		if mid != tt.rssMid || largest != tt.rssMax || n != tt.n {
			t.Errorf("%s: rssBetween = %d, %d, %d; want %d, %d, %d", tt.name, mid, largest, n, tt.rssMid, tt.rssMax, tt.n)
		}
		live, liveMax, heapMax, n := heapBetween(cycles, tt.from, tt.to)
		if live != tt.live || liveMax != tt.liveMax || heapMax != tt.heapMax || n != tt.n {
			t.Errorf("%s: heapBetween = %d, %d, %d, %d; want %d, %d, %d, %d", tt.name, live, liveMax, heapMax, n, tt.live, tt.liveMax, tt.heapMax, tt.n)
		}
	}
}

func TestSampleRSSReadsTheProcessUntilFinished(t *testing.T) {
	s := sampleRSS(os.Getpid(), time.Now(), time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		n := len(s.samples)
		s.mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	got := s.finish()
	if len(got) < 3 {
		t.Fatalf("%d samples in 10 s at 1 ms", len(got))
	}
	for i, x := range got {
		if x.rss <= 0 || (i > 0 && x.at < got[i-1].at) {
			t.Errorf("sample %d: %+v after %+v", i, x, got[max(i-1, 0)])
		}
	}
	if again := s.finish(); len(again) != len(got) {
		t.Errorf("sampled on after finish: %d samples, then %d", len(got), len(again))
	}
}
