// Package sample declares what declared's test reads.
package sample

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

const subsystem = "sample"

type Color string

const (
	Red  Color = "red"
	Blue Color = "blue"
	// Not a Color.
	Other = "other"
)

const Green Color = "green"

var (
	hits = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "ns", Subsystem: subsystem, Name: "hits_total",
	}, []string{"server", "color"})
	took = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "ns", Name: "took_seconds",
	}, []string{"server"})
	// Not a vector: not listed.
	up = promauto.NewGauge(prometheus.GaugeOpts{Name: "up"})
)
