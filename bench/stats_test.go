package main

import (
	"math"
	"testing"
)

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	tests := []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"empty", nil, 50, 0},
		{"one", []float64{7}, 99, 7},
		{"p50 of 1..100", hundred, 50, 50},
		{"p99 of 1..100", hundred, 99, 99},
		{"p100 of 1..100", hundred, 100, 100},
		{"p1 of 1..100", hundred, 1, 1},
		{"p99 of 10 values is the largest", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 10},
		{"p50 of 4 values", []float64{1, 2, 3, 4}, 50, 2},
	}
	for _, tt := range tests {
		if got := percentile(tt.sorted, tt.p); got != tt.want {
			t.Errorf("%s: percentile(%v) = %v, want %v", tt.name, tt.p, got, tt.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name   string
		sample []float64
		want   latencyStats
	}{
		{"empty", nil, latencyStats{}},
		{"unsorted", []float64{0.003, 0.001, 0.002}, latencyStats{n: 3, mean: 0.002, p50: 0.002, p99: 0.003, max: 0.003}},
	}
	for _, tt := range tests {
		got := summarize(tt.sample)
		if got.n != tt.want.n || math.Abs(got.mean-tt.want.mean) > 1e-12 || got.p50 != tt.want.p50 || got.p99 != tt.want.p99 || got.max != tt.want.max {
			t.Errorf("%s: summarize = %+v, want %+v", tt.name, got, tt.want)
		}
	}
	s := []float64{3, 1, 2}
	summarize(s)
	if s[0] != 3 {
		t.Error("summarize sorted its argument")
	}
}

func TestMedianAndRatio(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{5}, 5}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if !math.IsNaN(ratio(1, 0)) || ratio(3, 2) != 1.5 {
		t.Error("ratio")
	}
}
