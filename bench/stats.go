package main

import (
	"math"
	"slices"
	"time"
)

// latencyStats summarises a sample of latencies (seconds).
type latencyStats struct {
	n              int
	mean, p50, p99 float64
	max            float64
}

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted; 0 when empty.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func summarize(sample []float64) latencyStats {
	if len(sample) == 0 {
		return latencyStats{}
	}
	s := slices.Clone(sample)
	slices.Sort(s)
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	return latencyStats{n: len(s), mean: sum / float64(len(s)), p50: percentile(s, 50), p99: percentile(s, 99), max: s[len(s)-1]}
}

func durations(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// median of values; 0 when empty.
func median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ratio is a/b, NaN when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}
