package publish

import (
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/statelog"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

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
	writerRefusals = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_refusals_total",
		Help: "Transactions etcd refused, by cause (no-space: the NOSPACE alarm; too-many-requests; permission-denied; too-large; corrupt; other).",
	}, []string{"server", "owner", "cause"})
	writerRefused = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_refused",
		Help: "1 for the cause etcd refuses this replica's writes for, as a whole, now; 0 once a write lands again.",
	}, []string{"server", "owner", "cause"})
	writerDryRun = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_dry_run_ops_total",
		Help: "With dry-run: own keys the writer would have put or deleted, by operation, each would-be put and delete counted once (0 without dry-run).",
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
		Help: "Keys external-dns wrote (records and TXT registry records) that the writer took over and deleted, with txt-owner-id (0 without it).",
	}, []string{"server", "owner"})
	sourceKindServed = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "source_kind_served",
		Help: "1 when the API server serves the kind and it is watched, 0 when its CRD is missing (and until the first discovery).",
	}, []string{"server", "owner", "kind"})
	sourceKindNamed = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "source_kind_named",
		Help: "1 when the stanza's sources option names the kind (a missing CRD is then a mistake), 0 when it is read by default.",
	}, []string{"server", "owner", "kind"})
	sourceRejections = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "source_rejections_total",
		Help: "Hostnames not published as asked, by object kind and cause, counted when reported (by the leader, once a cause that waits on another controller has lasted 10s); each is also a Warning Event on its object.",
	}, []string{"server", "owner", "kind", "cause"})
	sourceRejecting = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "source_rejected_names",
		Help: "Hostnames not published as asked now, by object kind and cause: the rejections reported (source_rejections_total) that still last.",
	}, []string{"server", "owner", "kind", "cause"})
)

// metrics is the kubesource.Observer and writer.Observer of one owner. The owner is unique in
// a Corefile (Owners.Claim); server is that of the block whose stanza publishes it.
type metrics struct {
	server  string
	owner   string
	dryRun  bool
	desired *source.Desired

	warned statelog.States[string, string] // what was last logged of a failure that is not a name's, by subject
}

// warnOnce logs a failure of subject (the election, a zone's scan) when it differs from the
// last one logged for it: a writer retries every few seconds, its log must not.
func (m *metrics) warnOnce(subject, reason string) {
	m.warned.Set(subject, reason, func(string) {
		log.Warningf("Writer for owner %q: %s: %s", m.owner, subject, reason)
	})
}

func (m *metrics) KindServed(kind, _ string, served bool) {
	v := 0.0
	if served {
		v = 1
	}
	sourceKindServed.WithLabelValues(m.server, m.owner, kind).Set(v)
}

func (m *metrics) Rejected(kind string, cause source.Cause) {
	sourceRejections.WithLabelValues(m.server, m.owner, kind, string(cause)).Inc()
}

func (m *metrics) Rejecting(kind string, cause source.Cause, n int) {
	sourceRejecting.WithLabelValues(m.server, m.owner, kind, string(cause)).Set(float64(n))
}

func (m *metrics) Leading(leading bool) {
	if m.dryRun {
		// A dry run never writes: counted as a leader, it would make two "leaders" of an owner
		// beside its real writer, and one of an owner external-dns still publishes.
		return
	}
	v := 0.0
	if leading {
		v = 1
	}
	writerLeader.WithLabelValues(m.server, m.owner).Set(v)
}

func (m *metrics) Committed(puts, deletes int) {
	writerWrites.WithLabelValues(m.server, m.owner, "put").Add(float64(puts))
	writerWrites.WithLabelValues(m.server, m.owner, "delete").Add(float64(deletes))
}

func (m *metrics) Conflict(plan.Conflict) {
	writerConflicts.WithLabelValues(m.server, m.owner).Inc()
}

func (m *metrics) Skipped(s plan.Skip) {
	writerSkipped.WithLabelValues(m.server, m.owner, string(s.Reason)).Inc()
}

func (m *metrics) Failed(string, error) {
	writerFailures.WithLabelValues(m.server, m.owner).Inc()
}

func (m *metrics) Refused(cause string, _ error) {
	writerRefusals.WithLabelValues(m.server, m.owner, cause).Inc()
}

// Refusing is told when etcd starts refusing the writes as a whole, and when it stops: logged
// once each, however many transactions and retries lie between.
func (m *metrics) Refusing(cause string, err error) {
	for _, c := range writer.RefusalCauses {
		v := 0.0
		if c == cause {
			v = 1
		}
		writerRefused.WithLabelValues(m.server, m.owner, c).Set(v)
	}
	if cause == "" {
		log.Infof("Writer for owner %q: etcd takes its writes again", m.owner)
		return
	}
	log.Warningf("Writer for owner %q: %v", m.owner, err)
}

func (m *metrics) Planned(c plan.Change) {
	writerDryRun.WithLabelValues(m.server, m.owner, "put").Add(float64(len(c.Puts)))
	writerDryRun.WithLabelValues(m.server, m.owner, "delete").Add(float64(len(c.Deletes)))
	log.Infof("Dry run: owner %q would write %s", m.owner, c)
}

func (m *metrics) Adopted(keys int) {
	writerAdopted.WithLabelValues(m.server, m.owner).Add(float64(keys))
	log.Infof("Writer for owner %q took over %d key(s) external-dns wrote (records and TXT registry records)", m.owner, keys)
}

func (m *metrics) Problems(lost, failing int) {
	writerLostNames.WithLabelValues(m.server, m.owner).Set(float64(lost))
	writerFailingNames.WithLabelValues(m.server, m.owner).Set(float64(failing))
}

func (m *metrics) Synced(at time.Time) {
	m.warned.Reset() // a full sync: the next failure is news again
	writerLastSync.WithLabelValues(m.server, m.owner).Set(float64(at.UnixNano()) / 1e9)
	writerDesired.WithLabelValues(m.server, m.owner).Set(float64(m.desired.Records()))
}

func (m *metrics) Propagated(_ string, d time.Duration) {
	writerPropagation.WithLabelValues(m.server, m.owner).Observe(d.Seconds())
}

// writerEtcdReachable is the publish role's view of etcd.
var writerEtcdReachable = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_etcd_reachable",
	Help: "1 while etcd answers the owner's writer, 0 before it first did and while it is unreachable.",
}, []string{"server", "owner"})

func (m *metrics) EtcdReachable(ok bool) {
	v := 0.0
	if ok {
		v = 1
	}
	writerEtcdReachable.WithLabelValues(m.server, m.owner).Set(v)
}

// writerWatchStreams are a publisher's etcd watch streams, as gRPC counts them: one on a
// leader (its key and the names lost to older claims share it) or a standby (the leader's
// key). A count that grows with each outage is a leak; a campaign's and a term's streams end
// with them.
var writerWatchStreams = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: plugin.Namespace, Subsystem: pluginName, Name: "writer_etcd_watch_streams",
	Help: "etcd watch streams this publishing replica holds open or is opening.",
}, []string{"server", "owner"})

// seriesAtZero creates the role's series at zero, as the serve role does its own: a standby
// replica exports writer_leader 0, so that "no replica leads" can be alerted on, and every
// label value a counter can take (each skip reason; each cause for each kind read) has its
// series, so that increase() sees the first event. The kinds are those the owner's sources
// read (kubesource.Options: source_kind_served is 0 until the first discovery). A series that
// already exists (a reload sharing the publisher) keeps its value.
func (c *Config) seriesAtZero() {
	server, owner, kinds := c.Stanza.Server, c.Owner, c.kindOptions()
	m := &metrics{server: server, owner: owner, dryRun: c.DryRun}
	discovered := kinds.DiscoveredKinds()
	m.atZero(discovered, kinds.SourceKinds())
	for _, kind := range discovered {
		v := 0.0
		if kinds.Named(kind) {
			v = 1
		}
		sourceKindNamed.WithLabelValues(server, owner, kind).Set(v)
	}
}

func (m *metrics) atZero(kinds, sources []string) {
	if !m.dryRun {
		writerLeader.WithLabelValues(m.server, m.owner)
	}
	writerEtcdReachable.WithLabelValues(m.server, m.owner)
	writerWatchStreams.WithLabelValues(m.server, m.owner)
	writerDesired.WithLabelValues(m.server, m.owner)
	for _, op := range []string{"put", "delete"} {
		writerWrites.WithLabelValues(m.server, m.owner, op)
		writerDryRun.WithLabelValues(m.server, m.owner, op)
	}
	writerConflicts.WithLabelValues(m.server, m.owner)
	writerFailures.WithLabelValues(m.server, m.owner)
	for _, cause := range writer.RefusalCauses {
		writerRefusals.WithLabelValues(m.server, m.owner, cause)
		writerRefused.WithLabelValues(m.server, m.owner, cause)
	}
	writerLostNames.WithLabelValues(m.server, m.owner)
	writerFailingNames.WithLabelValues(m.server, m.owner)
	writerLastSync.WithLabelValues(m.server, m.owner)
	writerPropagation.WithLabelValues(m.server, m.owner)
	writerAdopted.WithLabelValues(m.server, m.owner)
	for _, reason := range plan.Reasons {
		writerSkipped.WithLabelValues(m.server, m.owner, string(reason))
	}
	for _, kind := range kinds {
		sourceKindServed.WithLabelValues(m.server, m.owner, kind)
	}
	for _, kind := range sources {
		for _, cause := range source.Causes {
			sourceRejections.WithLabelValues(m.server, m.owner, kind, string(cause))
			sourceRejecting.WithLabelValues(m.server, m.owner, kind, string(cause))
		}
	}
}

// forgetSeries deletes the role's series of an owner published by a server block once its
// last publisher has stopped, as the serve role forgets a feed's: nothing would update them
// any more, and a frozen writer_leader 1 would count as a second leader of the owner
// (GatewayDNSWriterLeader).
func forgetSeries(server, owner string) {
	labels := prometheus.Labels{"server": server, "owner": owner}
	for _, vec := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{writerLeader, writerDesired, writerWrites, writerConflicts, writerLostNames,
		writerFailingNames, writerSkipped, writerFailures, writerRefusals, writerRefused, writerDryRun, writerLastSync, writerPropagation,
		writerAdopted, sourceKindServed, sourceKindNamed, sourceRejections, sourceRejecting, writerEtcdReachable, writerWatchStreams} {
		vec.DeletePartialMatch(labels)
	}
}
