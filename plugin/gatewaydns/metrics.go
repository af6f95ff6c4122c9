package gatewaydns

import (
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/batchrun"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/xfr"
)

// Every metric carries the server block's address (server, see serverLabel) and the stanza's
// zones (the publish role's, in package publish: its owner), so that two stanzas do not mix
// their numbers: two server blocks may serve the same zones, and only the server tells them
// apart. A reload's old and new stanza of one server block share their series, as they share
// their feed.
var (
	indexRecords = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "index_records",
		Help: "Records held in memory for answering.",
	}, []string{"server", "zones"})
	watchEvents = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "watch_events_total",
		Help: "Changes received from the etcd watch, by type (put, delete).",
	}, []string{"server", "zones", "type"})
	resyncs = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "resyncs_total",
		Help: "Full loads of the zone from etcd, by reason (start, compacted, inconsistent, new-store: etcd restored from a snapshot or another cluster).",
	}, []string{"server", "zones", "reason"})
	resyncDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "resync_duration_seconds",
		Help:    "Time a full load from etcd took.",
		Buckets: prometheus.ExponentialBuckets(0.005, 4, 8),
	}, []string{"server", "zones"})
	lastUpdate = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "last_update_timestamp_seconds",
		Help: "When etcd last answered the watch (a change or a progress notification); the age of the answers is time() minus this.",
	}, []string{"server", "zones"})
	etcdErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "etcd_errors_total",
		Help: "Failed etcd requests, by operation (get, watch, lease).",
	}, []string{"server", "zones", "op"})
	cnameClashes = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "cname_clashes",
		Help: "Names whose records mix a CNAME with addresses, or hold CNAMEs to different targets: answered from the older claim only.",
	}, []string{"server", "zones"})
	invalidRecords = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "invalid_records_total",
		Help: "Values in etcd skipped because they cannot be served (bad JSON, bad host, bad key).",
	}, []string{"server", "zones"})
)

// Steering (shared/spec/steering.md): a name whose every owner's checked addresses are held
// down answers all of them (fail open, as Route 53 does), which a gauge and a counter say, and
// a log line per name and change, so that an alert can name the state and the log the names.
var (
	steeringFailOpen = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "steering_fail_open_names",
		Help: "Names with no eligible owner (every owner's health-checked addresses down), answered with every owner's addresses (fail open).",
	}, []string{"server", "zones"})
	steeringFailOpenTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "steering_fail_open_total",
		Help: "Times a name started failing open: no owner eligible, every owner's addresses answered.",
	}, []string{"server", "zones"})
)

// failOpen is the index's Options.FailOpen for a stanza's zones.
func failOpen(server, zones, name string, failing bool, names int) {
	steeringFailOpen.WithLabelValues(server, zones).Set(float64(names))
	if failing {
		steeringFailOpenTotal.WithLabelValues(server, zones).Inc()
		log.Warningf("No owner of %s is eligible: every health-checked address is down; answering every owner's addresses (fail open)", name)
		return
	}
	log.Infof("%s has an eligible owner again; answering by its steering policy", name)
}

// watchMetrics is the mirror.Observer of one feed. A feed serves one server block (its key
// holds the server: see config.feedKey), so its series are that block's alone.
type watchMetrics struct {
	server, zones string
	count         func() int
}

func (m watchMetrics) Resynced(reason string, _ int, took time.Duration) {
	resyncs.WithLabelValues(m.server, m.zones, reason).Inc()
	resyncDuration.WithLabelValues(m.server, m.zones).Observe(took.Seconds())
	indexRecords.WithLabelValues(m.server, m.zones).Set(float64(m.count()))
}

func (m watchMetrics) Applied(puts, deletes int) {
	if puts > 0 {
		watchEvents.WithLabelValues(m.server, m.zones, "put").Add(float64(puts))
	}
	if deletes > 0 {
		watchEvents.WithLabelValues(m.server, m.zones, "delete").Add(float64(deletes))
	}
	indexRecords.WithLabelValues(m.server, m.zones).Set(float64(m.count()))
}

func (m watchMetrics) Heard() {
	lastUpdate.WithLabelValues(m.server, m.zones).SetToCurrentTime()
}

func (m watchMetrics) Failed(op string, _ error) {
	etcdErrors.WithLabelValues(m.server, m.zones, op).Inc()
}

// etcdReachable is the serve role's view of etcd, set on every change: 0 from the start until
// the first full load, and while etcd is refused or does not answer.
var etcdReachable = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: plugin.Namespace, Subsystem: pluginName, Name: "etcd_reachable",
	Help: "1 while etcd answers the watch of the zones, 0 before the first load and while it is unreachable.",
}, []string{"server", "zones"})

func (m watchMetrics) Reachable(ok bool) {
	v := 0.0
	if ok {
		v = 1
	}
	etcdReachable.WithLabelValues(m.server, m.zones).Set(v)
}

// etcdWatchStreams are the serve role's etcd watch streams, as gRPC counts them (a stream
// waiting for a connection included): one per zone prefix. A count that grows with each outage
// is a leak; every watch session's streams end with it (store.Watches).
var etcdWatchStreams = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: plugin.Namespace, Subsystem: pluginName, Name: "etcd_watch_streams",
	Help: "etcd watch streams the serve role holds open or is opening: one per zone prefix in normal work.",
}, []string{"server", "zones"})

// metricsAtZero creates the serve role's series of a server block's zones, so that a rate or an
// increase over them sees the first event, and an alert on them can tell "none yet" from "not
// exported". A series that already exists (a reload sharing the feed) keeps its value.
func metricsAtZero(server, zones string) {
	for _, op := range []string{"get", "watch", "lease", "check"} {
		etcdErrors.WithLabelValues(server, zones, op)
	}
	for _, reason := range []string{"start", "compacted", "inconsistent", "new-store"} {
		resyncs.WithLabelValues(server, zones, reason)
	}
	for _, typ := range []string{"put", "delete"} {
		watchEvents.WithLabelValues(server, zones, typ)
	}
	invalidRecords.WithLabelValues(server, zones)
	steeringFailOpen.WithLabelValues(server, zones)
	steeringFailOpenTotal.WithLabelValues(server, zones)
	resyncDuration.WithLabelValues(server, zones)
	cnameClashes.WithLabelValues(server, zones)
	indexRecords.WithLabelValues(server, zones)
	lastUpdate.WithLabelValues(server, zones)
	etcdReachable.WithLabelValues(server, zones)
	etcdWatchStreams.WithLabelValues(server, zones)
	batchrun.SeriesAtZero(server, zones)
	xfr.SeriesAtZero(server, zones)
}

// seriesOf is what every metric vector can do: forget the series of some label values.
type seriesOf interface {
	DeletePartialMatch(prometheus.Labels) int
}

// forgetServeSeries deletes the serve role's series of a server block's zones once the last
// feed labelled with them has stopped. Nothing would update them any more, and a frozen
// last_update_timestamp_seconds or etcd_reachable of a server block that a reload removed or
// moved to another port would raise GatewayDNSStale or GatewayDNSEtcdUnreachable, until the
// process ends, for a server that no longer exists.
func forgetServeSeries(server, zones string) {
	labels := prometheus.Labels{"server": server, "zones": zones}
	for _, vec := range []seriesOf{indexRecords, watchEvents, resyncs, resyncDuration, lastUpdate, etcdErrors,
		cnameClashes, invalidRecords, etcdReachable, etcdWatchStreams, steeringFailOpen, steeringFailOpenTotal} {
		vec.DeletePartialMatch(labels)
	}
	batchrun.ForgetSeries(labels)
	xfr.ForgetSeries(labels)
}
