package batchrun

import (
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// pluginName is the plugin the path answers for: its metrics' subsystem, its logs' and the
// plugin label of the replies it counts in CoreDNS's request metrics.
const pluginName = "gatewaydns"

var log = clog.NewWithPlugin(pluginName)

// questions are the UDP questions the batched path read. What it answers counts in CoreDNS's
// own request metrics too (requestMetrics); this says how much of the zone's traffic it takes,
// and whether its handoff keeps up.
var questions = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: plugin.Namespace, Subsystem: pluginName, Name: "udp_batch_questions_total",
	Help: "UDP questions the batched path read, by outcome: answered (from a packed reply), handed_off (to the server's plugin chain), dropped (the handoff had no room).",
}, []string{"server", "zones", "outcome"})

// SeriesAtZero makes the series of a server block's stanza (server, zones), so that the first
// scrape has them.
func SeriesAtZero(server, zones string) {
	for _, outcome := range []string{"answered", "handed_off", "dropped"} {
		questions.WithLabelValues(server, zones, outcome)
	}
}

// ForgetSeries deletes the series that carry labels (a server block's server and zones), once
// the plugin has stopped the last feed labelled with them.
func ForgetSeries(labels prometheus.Labels) { questions.DeletePartialMatch(labels) }
