package healthcheck

import (
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics carry the server block (server) and, per target, only for the networks the
// operator names (Config.MetricsFor): a landscape may check 10,000 addresses, and two series
// each would be 20,000 series on every scrape of every serving replica, most of them saying
// "up" forever. The aggregates below say how many targets are in each state, how checks go
// and whether intervals hold; the log line of each change names the target; explain names
// each owner's health; the series of one target are there for the few an operator watches.
const subsystem = "gatewaydns"

var (
	targetsByState = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: subsystem, Name: "healthcheck_targets",
		Help: "Health-checked addresses by state (unknown, up, down).",
	}, []string{"server", "state"})
	checks = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: subsystem, Name: "healthcheck_checks_total",
		Help: "Health checks run, by scheme (tcp, http, https) and result (pass, fail).",
	}, []string{"server", "scheme", "result"})
	checkDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: subsystem, Name: "healthcheck_duration_seconds",
		Help:    "How long a health check took, by scheme; a failure by timeout takes the timeout.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 12),
	}, []string{"server", "scheme"})
	transitions = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: subsystem, Name: "healthcheck_transitions_total",
		Help: "Health-checked addresses that changed state, by the state they went to.",
	}, []string{"server", "state"})
	checkDelay = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: subsystem, Name: "healthcheck_delay_seconds",
		Help:    "How late a check started after it was due: intervals hold while this stays near 0.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 12),
	}, []string{"server"})
	checksInconclusive = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: subsystem, Name: "healthcheck_inconclusive_total",
		Help: "Failed checks that ended well after their timeout (the checker got no CPU in time) and so count neither way.",
	}, []string{"server"})
	checksSkipped = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: subsystem, Name: "healthcheck_skipped_total",
		Help: "Checks not run when due because the target's previous check had not ended (the workers are saturated).",
	}, []string{"server"})
	targetUp = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: subsystem, Name: "healthcheck_target_up",
		Help: "1 while a checked address is up, 0 while it is down; only for the networks of the healthcheck-metrics option.",
	}, []string{"server", "target"})
	targetDuration = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: subsystem, Name: "healthcheck_target_duration_seconds",
		Help: "How long the last check of an address took; only for the networks of the healthcheck-metrics option.",
	}, []string{"server", "target"})
)

// metrics are one Checker's series.
type metrics struct {
	server       string
	delay        prometheus.Observer
	skipped      prometheus.Counter
	inconclusive prometheus.Counter
	// per scheme: pass, fail and duration, looked up once.
	pass, fail map[string]prometheus.Counter
	duration   map[string]prometheus.Observer
}

func newMetrics(server string) *metrics {
	m := &metrics{server: server, delay: checkDelay.WithLabelValues(server), skipped: checksSkipped.WithLabelValues(server),
		inconclusive: checksInconclusive.WithLabelValues(server),
		pass:         map[string]prometheus.Counter{}, fail: map[string]prometheus.Counter{}, duration: map[string]prometheus.Observer{}}
	for _, s := range []string{"tcp", "http", "https"} {
		m.pass[s] = checks.WithLabelValues(server, s, "pass")
		m.fail[s] = checks.WithLabelValues(server, s, "fail")
		m.duration[s] = checkDuration.WithLabelValues(server, s)
	}
	for _, st := range stateNames {
		targetsByState.WithLabelValues(server, st)
		transitions.WithLabelValues(server, st)
	}
	return m
}

// checked counts one check of t.
func (m *metrics) checked(t *target, passed bool, took time.Duration) {
	scheme := t.Check.Scheme
	if passed {
		m.pass[scheme].Inc()
	} else {
		m.fail[scheme].Inc()
	}
	m.duration[scheme].Observe(took.Seconds())
}

// own sets the series of a target that has its own, after each of its checks (so that they
// come back within an interval if a reload's old Checker deleted them as it stopped).
func (m *metrics) own(t *target, st State, took time.Duration) {
	targetDuration.WithLabelValues(m.server, t.name).Set(took.Seconds())
	if st != Unknown {
		up := 0.0
		if st == Up {
			up = 1
		}
		targetUp.WithLabelValues(m.server, t.name).Set(up)
	}
}

// changed counts a change of state from prev to cur.
func (m *metrics) changed(prev, cur State) {
	targetsByState.WithLabelValues(m.server, prev.String()).Dec()
	targetsByState.WithLabelValues(m.server, cur.String()).Inc()
	transitions.WithLabelValues(m.server, cur.String()).Inc()
}

// added and removed keep the count of targets by state.
func (m *metrics) added(*target) { targetsByState.WithLabelValues(m.server, Unknown.String()).Inc() }

// removed takes t out of the counts, and its own series away: when it is no longer checked,
// or when its Checker stops (a reload's new Checker counts its own).
func (m *metrics) removed(t *target, st State) {
	targetsByState.WithLabelValues(m.server, st.String()).Dec()
	m.forget(t)
}

// forget deletes t's own series, when it has them.
func (m *metrics) forget(t *target) {
	if t.ownSeries {
		targetUp.DeleteLabelValues(m.server, t.name)
		targetDuration.DeleteLabelValues(m.server, t.name)
	}
}

// ForgetSeries deletes every series of a server block, for the serve role to call once the
// block's last Checker has stopped: nothing would update them any more.
func ForgetSeries(server string) {
	labels := prometheus.Labels{"server": server}
	for _, vec := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{targetsByState, checks, checkDuration, transitions, checkDelay, checksSkipped, checksInconclusive, targetUp, targetDuration} {
		vec.DeletePartialMatch(labels)
	}
}
