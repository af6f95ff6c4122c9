package xfr

import (
	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The metrics of zone transfers and NOTIFYs. Like the serve role's (the plugin's metrics.go),
// they carry the server block's address and the stanza's zones.
var (
	transfers = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "transfers_total",
		Help: "Zone transfers asked for, by kind (full: the whole zone; incremental: an IXFR answered with the difference; history: the difference from a serial before the journal, read from etcd's history; current: an IXFR from a secondary that was up to date; busy: refused while as many run as may).",
	}, []string{"server", "zones", "kind"})
	notifies = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "notifies_total",
		Help: "NOTIFYs sent to the transfer plugin's secondaries after a change, one per secondary, by result (ok, failed: not answered in 3 tries, or refused).",
	}, []string{"server", "zones", "result"})
)

// SeriesAtZero creates the series of a server block's zones at zero, so that a rate or an
// increase over them sees the first event.
func SeriesAtZero(server, zones string) {
	for _, kind := range []string{"full", "incremental", "history", "current", "busy"} {
		transfers.WithLabelValues(server, zones, kind)
	}
	for _, result := range []string{"ok", "failed"} {
		notifies.WithLabelValues(server, zones, result)
	}
}

// ForgetSeries deletes the series that carry labels (a server block's server and zones), once
// the plugin has stopped the last feed labelled with them.
func ForgetSeries(labels prometheus.Labels) {
	transfers.DeletePartialMatch(labels)
	notifies.DeletePartialMatch(labels)
}
