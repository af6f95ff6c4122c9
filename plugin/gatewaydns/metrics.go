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
	cnameClashes = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "cname_clashes",
		Help: "Names whose records mix a CNAME with addresses, or hold CNAMEs to different targets: answered from the older claim only.",
	}, []string{"zones"})
	invalidRecords = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "invalid_records_total",
		Help: "Values in etcd skipped because they cannot be served (bad JSON, bad host, bad key).",
	}, []string{"zones"})
)

// watchMetrics is the mirror.Observer of one stanza.
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

// The publish role's metrics carry the owner id.
var (
	writerLeader = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_leader",
		Help: "1 while this replica is the writer of its owner, 0 while it stands by.",
	}, []string{"owner"})
	writerDesired = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_desired_records",
		Help: "Records (name and target pairs) the cluster's objects ask for, at the last full sync.",
	}, []string{"owner"})
	writerWrites = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_writes_total",
		Help: "Own keys written to etcd, by operation (put, delete).",
	}, []string{"owner", "op"})
	writerConflicts = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_conflicts_total",
		Help: "Names lost to an older claim (exclusive mode, or a CNAME beside other data), once per name, winner and object.",
	}, []string{"owner"})
	writerLostNames = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_lost_names",
		Help: "Names the cluster's objects ask for that an older claim holds, now.",
	}, []string{"owner"})
	writerFailingNames = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_failing_names",
		Help: "Names (or zones) the last attempt could not read or write, now.",
	}, []string{"owner"})
	writerSkipped = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_skipped_total",
		Help: "Names or deletes left alone, by reason (e.g. not-owned: a key of another writer).",
	}, []string{"owner", "reason"})
	writerFailures = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_failures_total",
		Help: "Names the store refused or could not be reached for, once per name and error; retried at the next sync.",
	}, []string{"owner"})
	writerDryRun = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_dry_run_ops_total",
		Help: "With dry-run: own keys the writer would have put or deleted, by operation, each planned change counted once.",
	}, []string{"owner", "op"})
	writerLastSync = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_last_sync_timestamp_seconds",
		Help: "When a full sync of every name last succeeded.",
	}, []string{"owner"})
	writerPropagation = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_propagation_seconds",
		Help:    "From an object change observed to its records committed in etcd.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	}, []string{"owner"})
	writerAdopted = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_adopted_keys_total",
		Help: "Keys external-dns wrote (records and TXT registry records) that the writer took over and deleted, with txt-owner-id.",
	}, []string{"owner"})
	sourceKindServed = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "source_kind_served",
		Help: "1 when the API server serves the kind and it is watched, 0 when its CRD is missing.",
	}, []string{"owner", "kind"})
	sourceRejections = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "source_rejections_total",
		Help: "Hostnames not published as asked, by object kind and cause; each is also a Warning Event on its object.",
	}, []string{"owner", "kind", "cause"})
)

// publishMetrics is the kubesource.Observer and writer.Observer of one owner.
type publishMetrics struct {
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
	sourceKindServed.WithLabelValues(m.owner, kind).Set(v)
}

func (m *publishMetrics) Rejected(kind string, cause source.Cause) {
	sourceRejections.WithLabelValues(m.owner, kind, string(cause)).Inc()
}

func (m *publishMetrics) Leading(leading bool) {
	v := 0.0
	if leading {
		v = 1
	}
	writerLeader.WithLabelValues(m.owner).Set(v)
}

func (m *publishMetrics) Committed(puts, deletes int) {
	writerWrites.WithLabelValues(m.owner, "put").Add(float64(puts))
	writerWrites.WithLabelValues(m.owner, "delete").Add(float64(deletes))
}

func (m *publishMetrics) Conflict(plan.Conflict) { writerConflicts.WithLabelValues(m.owner).Inc() }

func (m *publishMetrics) Skipped(s plan.Skip) {
	writerSkipped.WithLabelValues(m.owner, string(s.Reason)).Inc()
}

func (m *publishMetrics) Failed(string, error) { writerFailures.WithLabelValues(m.owner).Inc() }

func (m *publishMetrics) Planned(c plan.Change) {
	writerDryRun.WithLabelValues(m.owner, "put").Add(float64(len(c.Puts)))
	writerDryRun.WithLabelValues(m.owner, "delete").Add(float64(len(c.Deletes)))
	log.Infof("Dry run: owner %q would write %s", m.owner, c)
}

func (m *publishMetrics) Adopted(keys int) {
	writerAdopted.WithLabelValues(m.owner).Add(float64(keys))
	log.Infof("Writer for owner %q took over %d key(s) external-dns wrote (records and TXT registry records)", m.owner, keys)
}

func (m *publishMetrics) Problems(lost, failing int) {
	writerLostNames.WithLabelValues(m.owner).Set(float64(lost))
	writerFailingNames.WithLabelValues(m.owner).Set(float64(failing))
}

func (m *publishMetrics) Synced(at time.Time) {
	m.recovered()
	writerLastSync.WithLabelValues(m.owner).Set(float64(at.UnixNano()) / 1e9)
	records := 0
	for _, ep := range m.desired.Endpoints() {
		records += len(ep.Targets) + len(ep.Records)
	}
	writerDesired.WithLabelValues(m.owner).Set(float64(records))
}

func (m *publishMetrics) Propagated(_ string, d time.Duration) {
	writerPropagation.WithLabelValues(m.owner).Observe(d.Seconds())
}

// etcdReachable is the serve role's view of etcd, set on every change: 0 from the start until
// the first full load, and while etcd is refused or does not answer.
var etcdReachable = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: plugin.Namespace, Subsystem: pluginName, Name: "etcd_reachable",
	Help: "1 while etcd answers the watch of the zones, 0 before the first load and while it is unreachable.",
}, []string{"zones"})

func (m watchMetrics) Reachable(ok bool) {
	v := 0.0
	if ok {
		v = 1
	}
	etcdReachable.WithLabelValues(m.zones).Set(v)
}

// writerEtcdReachable is the publish role's view of etcd.
var writerEtcdReachable = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_etcd_reachable",
	Help: "1 while etcd answers the owner's writer, 0 before it first did and while it is unreachable.",
}, []string{"owner"})

func (m *publishMetrics) EtcdReachable(ok bool) {
	v := 0.0
	if ok {
		v = 1
	}
	writerEtcdReachable.WithLabelValues(m.owner).Set(v)
}

// metricsAtZero creates the serve role's series of zones, so that a rate or an increase over
// them sees the first event, and an alert on them can tell "none yet" from "not exported".
// A series that already exists (a reload sharing the feed) keeps its value.
func metricsAtZero(zones string) {
	for _, op := range []string{"get", "watch", "lease", "check"} {
		etcdErrors.WithLabelValues(zones, op)
	}
	for _, reason := range []string{"start", "compacted", "inconsistent"} {
		resyncs.WithLabelValues(zones, reason)
	}
	for _, typ := range []string{"put", "delete"} {
		watchEvents.WithLabelValues(zones, typ)
	}
	invalidRecords.WithLabelValues(zones)
	indexRecords.WithLabelValues(zones)
	lastUpdate.WithLabelValues(zones)
	etcdReachable.WithLabelValues(zones)
	transferMetricsAtZero(zones)
}

// atZero creates the publish role's series of the owner at zero, as metricsAtZero does: a
// standby replica exports writer_leader 0, so that "no replica leads" can be alerted on.
func (m *publishMetrics) atZero() {
	writerLeader.WithLabelValues(m.owner)
	writerEtcdReachable.WithLabelValues(m.owner)
	writerDesired.WithLabelValues(m.owner)
	for _, op := range []string{"put", "delete"} {
		writerWrites.WithLabelValues(m.owner, op)
	}
	writerConflicts.WithLabelValues(m.owner)
	writerFailures.WithLabelValues(m.owner)
	writerLostNames.WithLabelValues(m.owner)
	writerFailingNames.WithLabelValues(m.owner)
	writerLastSync.WithLabelValues(m.owner)
	if m.dryRun {
		for _, op := range []string{"put", "delete"} {
			writerDryRun.WithLabelValues(m.owner, op)
		}
	}
	if m.adopts {
		writerAdopted.WithLabelValues(m.owner)
	}
}

// Zone transfers (transfer.go, notify.go).
var (
	transfers = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "transfers_total",
		Help: "Zone transfers served, by kind (full: the whole zone; current: an IXFR from a secondary that was up to date).",
	}, []string{"zones", "kind"})
	notifies = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "notifies_total",
		Help: "NOTIFY rounds sent to the transfer plugin's secondaries after a change, by result (ok, failed).",
	}, []string{"zones", "result"})
)

func transferMetricsAtZero(zones string) {
	for _, kind := range []string{"full", "current"} {
		transfers.WithLabelValues(zones, kind)
	}
	for _, result := range []string{"ok", "failed"} {
		notifies.WithLabelValues(zones, result)
	}
}
