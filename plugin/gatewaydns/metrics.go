package gatewaydns

import (
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Every metric carries the stanza's zones, so that two stanzas (or a reload's old and new
// instance) do not mix their numbers.
var (
	indexRecords = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "index_records",
		Help: "Records held in memory for answering.",
	}, []string{"zones"})
	watchEvents = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "watch_events_total",
		Help: "Changes received from the etcd watch, by type (put, delete).",
	}, []string{"zones", "type"})
	resyncs = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "resyncs_total",
		Help: "Full loads of the zone from etcd, by reason (start, compacted).",
	}, []string{"zones", "reason"})
	resyncDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "resync_duration_seconds",
		Help:    "Time a full load from etcd took.",
		Buckets: prometheus.ExponentialBuckets(0.005, 4, 8),
	}, []string{"zones"})
	lastUpdate = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "last_update_timestamp_seconds",
		Help: "When etcd last answered the watch (a change or a progress notification); the age of the answers is time() minus this.",
	}, []string{"zones"})
	etcdErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "etcd_errors_total",
		Help: "Failed etcd requests, by operation (get, watch, lease).",
	}, []string{"zones", "op"})
	invalidRecords = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "invalid_records_total",
		Help: "Values in etcd skipped because they cannot be served (bad JSON, bad host, bad key).",
	}, []string{"zones"})
)

// watchMetrics is the store.Observer of one stanza.
type watchMetrics struct {
	zones string
	count func() int
}

func (m watchMetrics) Resynced(reason string, _ int, took time.Duration) {
	resyncs.WithLabelValues(m.zones, reason).Inc()
	resyncDuration.WithLabelValues(m.zones).Observe(took.Seconds())
	indexRecords.WithLabelValues(m.zones).Set(float64(m.count()))
}

func (m watchMetrics) Applied(puts, deletes int) {
	if puts > 0 {
		watchEvents.WithLabelValues(m.zones, "put").Add(float64(puts))
	}
	if deletes > 0 {
		watchEvents.WithLabelValues(m.zones, "delete").Add(float64(deletes))
	}
	indexRecords.WithLabelValues(m.zones).Set(float64(m.count()))
}

func (m watchMetrics) Heard() {
	lastUpdate.WithLabelValues(m.zones).SetToCurrentTime()
}

func (m watchMetrics) Failed(op string, _ error) {
	etcdErrors.WithLabelValues(m.zones, op).Inc()
}
