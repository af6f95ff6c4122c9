package gatewaydns

import (
	"sync"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// Every metric carries the server block's address (server, see serverLabel) and the stanza's
// zones (the publish role's: its owner), so that two stanzas do not mix their numbers: two
// server blocks may serve the same zones, and only the server tells them apart. A reload's old
// and new stanza of one server block share their series, as they share their feed.
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
		Help: "Full loads of the zone from etcd, by reason (start, compacted).",
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

// The publish role's metrics carry the owner id.
var (
	writerLeader = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_leader",
		Help: "1 while this replica is the writer of its owner, 0 while it stands by.",
	}, []string{"server", "owner"})
	writerDesired = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_desired_records",
		Help: "Records (name and target pairs) the cluster's objects ask for, at the last full sync.",
	}, []string{"server", "owner"})
	writerWrites = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_writes_total",
		Help: "Own keys written to etcd, by operation (put, delete).",
	}, []string{"server", "owner", "op"})
	writerConflicts = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_conflicts_total",
		Help: "Names lost to an older claim (exclusive mode, or a CNAME beside other data), once per name, winner and object.",
	}, []string{"server", "owner"})
	writerLostNames = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_lost_names",
		Help: "Names the cluster's objects ask for that an older claim holds, now.",
	}, []string{"server", "owner"})
	writerFailingNames = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_failing_names",
		Help: "Names (or zones) the last attempt could not read or write, now.",
	}, []string{"server", "owner"})
	writerSkipped = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_skipped_total",
		Help: "Names or deletes left alone, by reason (e.g. not-owned: a key of another writer).",
	}, []string{"server", "owner", "reason"})
	writerFailures = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_failures_total",
		Help: "Names the store refused or could not be reached for, once per name and error; retried at the next sync.",
	}, []string{"server", "owner"})
	writerDryRun = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_dry_run_ops_total",
		Help: "With dry-run: own keys the writer would have put or deleted, by operation, each planned change counted once.",
	}, []string{"server", "owner", "op"})
	writerLastSync = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_last_sync_timestamp_seconds",
		Help: "When a full sync of every name last succeeded.",
	}, []string{"server", "owner"})
	writerPropagation = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_propagation_seconds",
		Help:    "From an object change observed to its records committed in etcd.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	}, []string{"server", "owner"})
	writerAdopted = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_adopted_keys_total",
		Help: "Keys external-dns wrote (records and TXT registry records) that the writer took over and deleted, with txt-owner-id.",
	}, []string{"server", "owner"})
	sourceKindServed = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "source_kind_served",
		Help: "1 when the API server serves the kind and it is watched, 0 when its CRD is missing.",
	}, []string{"server", "owner", "kind"})
	sourceRejections = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "source_rejections_total",
		Help: "Hostnames not published as asked, by object kind and cause; each is also a Warning Event on its object.",
	}, []string{"server", "owner", "kind", "cause"})
)

// publishMetrics is the kubesource.Observer and writer.Observer of one owner. The owner is
// unique in a Corefile (claimOwner); server is that of the block whose stanza publishes it.
type publishMetrics struct {
	server  string
	owner   string
	dryRun  bool
	adopts  bool // txt-owner-id: writer_adopted_keys_total is exported
	desired *source.Desired

	mu     sync.Mutex
	warned map[string]string // what was last logged of a failure that is not a name's, by subject
}

// warnOnce logs a failure of subject (the election, a zone's scan) when it differs from the
// last one logged for it: a writer retries every few seconds, its log must not.
func (m *publishMetrics) warnOnce(subject, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.warned[subject] == reason {
		return
	}
	if m.warned == nil {
		m.warned = map[string]string{}
	}
	m.warned[subject] = reason
	log.Warningf("Writer for owner %q: %s: %s", m.owner, subject, reason)
}

// recovered forgets the failures logged: the next one is news again.
func (m *publishMetrics) recovered() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.warned)
}

func (m *publishMetrics) KindServed(kind, _ string, served bool) {
	v := 0.0
	if served {
		v = 1
	}
	sourceKindServed.WithLabelValues(m.server, m.owner, kind).Set(v)
}

func (m *publishMetrics) Rejected(kind string, cause source.Cause) {
	sourceRejections.WithLabelValues(m.server, m.owner, kind, string(cause)).Inc()
}

func (m *publishMetrics) Leading(leading bool) {
	v := 0.0
	if leading {
		v = 1
	}
	writerLeader.WithLabelValues(m.server, m.owner).Set(v)
}

func (m *publishMetrics) Committed(puts, deletes int) {
	writerWrites.WithLabelValues(m.server, m.owner, "put").Add(float64(puts))
	writerWrites.WithLabelValues(m.server, m.owner, "delete").Add(float64(deletes))
}

func (m *publishMetrics) Conflict(plan.Conflict) {
	writerConflicts.WithLabelValues(m.server, m.owner).Inc()
}

func (m *publishMetrics) Skipped(s plan.Skip) {
	writerSkipped.WithLabelValues(m.server, m.owner, string(s.Reason)).Inc()
}

func (m *publishMetrics) Failed(string, error) {
	writerFailures.WithLabelValues(m.server, m.owner).Inc()
}

func (m *publishMetrics) Planned(c plan.Change) {
	writerDryRun.WithLabelValues(m.server, m.owner, "put").Add(float64(len(c.Puts)))
	writerDryRun.WithLabelValues(m.server, m.owner, "delete").Add(float64(len(c.Deletes)))
	log.Infof("Dry run: owner %q would write %s", m.owner, c)
}

func (m *publishMetrics) Adopted(keys int) {
	writerAdopted.WithLabelValues(m.server, m.owner).Add(float64(keys))
	log.Infof("Writer for owner %q took over %d key(s) external-dns wrote (records and TXT registry records)", m.owner, keys)
}

func (m *publishMetrics) Problems(lost, failing int) {
	writerLostNames.WithLabelValues(m.server, m.owner).Set(float64(lost))
	writerFailingNames.WithLabelValues(m.server, m.owner).Set(float64(failing))
}

func (m *publishMetrics) Synced(at time.Time) {
	m.recovered()
	writerLastSync.WithLabelValues(m.server, m.owner).Set(float64(at.UnixNano()) / 1e9)
	records := 0
	for _, ep := range m.desired.Endpoints() {
		records += len(ep.Targets) + len(ep.Records)
	}
	writerDesired.WithLabelValues(m.server, m.owner).Set(float64(records))
}

func (m *publishMetrics) Propagated(_ string, d time.Duration) {
	writerPropagation.WithLabelValues(m.server, m.owner).Observe(d.Seconds())
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

// writerEtcdReachable is the publish role's view of etcd.
var writerEtcdReachable = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_etcd_reachable",
	Help: "1 while etcd answers the owner's writer, 0 before it first did and while it is unreachable.",
}, []string{"server", "owner"})

func (m *publishMetrics) EtcdReachable(ok bool) {
	v := 0.0
	if ok {
		v = 1
	}
	writerEtcdReachable.WithLabelValues(m.server, m.owner).Set(v)
}

// metricsAtZero creates the serve role's series of a server block's zones, so that a rate or an
// increase over them sees the first event, and an alert on them can tell "none yet" from "not
// exported". A series that already exists (a reload sharing the feed) keeps its value.
func metricsAtZero(server, zones string) {
	for _, op := range []string{"get", "watch", "lease", "check"} {
		etcdErrors.WithLabelValues(server, zones, op)
	}
	for _, reason := range []string{"start", "compacted", "inconsistent"} {
		resyncs.WithLabelValues(server, zones, reason)
	}
	for _, typ := range []string{"put", "delete"} {
		watchEvents.WithLabelValues(server, zones, typ)
	}
	invalidRecords.WithLabelValues(server, zones)
	cnameClashes.WithLabelValues(server, zones)
	indexRecords.WithLabelValues(server, zones)
	lastUpdate.WithLabelValues(server, zones)
	etcdReachable.WithLabelValues(server, zones)
	transferMetricsAtZero(server, zones)
}

// atZero creates the publish role's series of the owner at zero, as metricsAtZero does: a
// standby replica exports writer_leader 0, so that "no replica leads" can be alerted on.
func (m *publishMetrics) atZero() {
	writerLeader.WithLabelValues(m.server, m.owner)
	writerEtcdReachable.WithLabelValues(m.server, m.owner)
	writerDesired.WithLabelValues(m.server, m.owner)
	for _, op := range []string{"put", "delete"} {
		writerWrites.WithLabelValues(m.server, m.owner, op)
	}
	writerConflicts.WithLabelValues(m.server, m.owner)
	writerFailures.WithLabelValues(m.server, m.owner)
	writerLostNames.WithLabelValues(m.server, m.owner)
	writerFailingNames.WithLabelValues(m.server, m.owner)
	writerLastSync.WithLabelValues(m.server, m.owner)
	if m.dryRun {
		for _, op := range []string{"put", "delete"} {
			writerDryRun.WithLabelValues(m.server, m.owner, op)
		}
	}
	if m.adopts {
		writerAdopted.WithLabelValues(m.server, m.owner)
	}
}

// Zone transfers (transfer.go, notify.go).
var (
	transfers = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "transfers_total",
		Help: "Zone transfers asked for, by kind (full: the whole zone; current: an IXFR from a secondary that was up to date; busy: refused while as many run as may).",
	}, []string{"server", "zones", "kind"})
	notifies = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "notifies_total",
		Help: "NOTIFYs sent to the transfer plugin's secondaries after a change, one per secondary, by result (ok, failed: not answered in 3 tries, or refused).",
	}, []string{"server", "zones", "result"})
)

func transferMetricsAtZero(server, zones string) {
	for _, kind := range []string{"full", "current", "busy"} {
		transfers.WithLabelValues(server, zones, kind)
	}
	for _, result := range []string{"ok", "failed"} {
		notifies.WithLabelValues(server, zones, result)
	}
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
		cnameClashes, invalidRecords, etcdReachable, transfers, notifies} {
		vec.DeletePartialMatch(labels)
	}
}

// forgetPublishSeries deletes the publish role's series of an owner published by a server
// block once its last publisher has stopped, for the same reason: a frozen writer_leader 1
// would count as a second leader of the owner (GatewayDNSWriterLeader).
func forgetPublishSeries(server, owner string) {
	labels := prometheus.Labels{"server": server, "owner": owner}
	for _, vec := range []seriesOf{writerLeader, writerDesired, writerWrites, writerConflicts, writerLostNames,
		writerFailingNames, writerSkipped, writerFailures, writerDryRun, writerLastSync, writerPropagation,
		writerAdopted, sourceKindServed, sourceRejections, writerEtcdReachable} {
		vec.DeletePartialMatch(labels)
	}
}
