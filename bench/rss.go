package main

import (
	"sync"
	"time"
)

// rssSample is a process's resident set size at a moment of its life.
type rssSample struct {
	at  time.Duration // since the process started
	rss int64
}

// rssSampler reads a process's VmRSS at a fixed interval until stopped. The peak between two
// samples is VmHWM's to tell (peakRSSBytes); the samples say what the RSS was when.
type rssSampler struct {
	mu       sync.Mutex
	samples  []rssSample
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

func sampleRSS(pid int, started time.Time, every time.Duration) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if rss, err := rssBytes(pid); err == nil {
				s.mu.Lock()
				s.samples = append(s.samples, rssSample{at: time.Since(started), rss: rss})
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// finish stops the sampling and returns every sample; it may be called again.
func (s *rssSampler) finish() []rssSample {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples
}

// rssBetween summarises the samples taken from one moment to another (since the start): the
// median and the largest, in bytes; n is how many there were.
func rssBetween(samples []rssSample, from, to time.Duration) (mid, largest int64, n int) {
	var vs []float64
	for _, s := range samples {
		if s.at >= from && s.at <= to {
			vs = append(vs, float64(s.rss))
			largest = max(largest, s.rss)
		}
	}
	return int64(median(vs)), largest, len(vs)
}

// heapBetween summarises the collections that ran from one moment to another: the median and
// the largest live heap they left, the largest heap any of them began or ended with, in bytes.
func heapBetween(cycles []gcCycle, from, to time.Duration) (medianLive, largestLive, largestHeap int64, n int) {
	var vs []float64
	for _, c := range cycles {
		if c.at >= from && c.at <= to {
			vs = append(vs, float64(c.marked))
			largestLive = max(largestLive, c.marked)
			largestHeap = max(largestHeap, c.start, c.end)
		}
	}
	return int64(median(vs)), largestLive, largestHeap, len(vs)
}
