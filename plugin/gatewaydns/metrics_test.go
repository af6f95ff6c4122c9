package gatewaydns

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// The server label is the address CoreDNS gives the block's server, formed from the keys as
// InspectServerBlocks leaves them and the listen hosts bind sets.
func TestServerLabelIsTheServersAddress(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keys  []string
		hosts []string // nil: no bind
		want  string
	}{
		{"no bind", []string{"dns://openmcp.cluster.:1053"}, nil, "dns://:1053"},
		{"bind to one address", []string{"dns://openmcp.cluster.:53"}, []string{"127.0.0.53"}, "dns://127.0.0.53:53"},
		{"bind to an IPv6 address", []string{"dns://openmcp.cluster.:53"}, []string{"::1"}, "dns://[::1]:53"},
		{"zones on one port: one server", []string{"dns://openmcp.cluster.:1053", "dns://10.in-addr.arpa.:1053"}, nil, "dns://:1053"},
		{"bind to several addresses: every address, sorted", []string{"dns://openmcp.cluster.:53"}, []string{"127.0.0.2", "127.0.0.1"},
			"dns://127.0.0.1:53 dns://127.0.0.2:53"},
		{"keys on several transports", []string{"tls://openmcp.cluster.:853", "dns://openmcp.cluster.:53"}, nil, "dns://:53 tls://:853"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", "gatewaydns")
			c.ServerBlockKeys = tc.keys
			if tc.hosts != nil {
				dnsserver.GetConfig(c).ListenHosts = tc.hosts
			}
			if got := serverLabel(c); got != tc.want {
				t.Errorf("server label %q, want %q", got, tc.want)
			}
		})
	}
}

// gatewaydnsSeries returns the labels of every gatewaydns series exported now, by metric.
func gatewaydnsSeries(t *testing.T) map[string][]map[string]string {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]map[string]string{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "coredns_gatewaydns_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[mf.GetName()] = append(out[mf.GetName()], labels)
		}
	}
	return out
}

// everySeries makes every series of a server block's serve and publish roles, those exported
// at zero and those made by what happens.
func everySeries(server, zones, owner string) {
	metricsAtZero(server, zones)
	w := watchMetrics{server: server, zones: zones, count: func() int { return 1 }}
	w.Resynced("start", 1, time.Millisecond)
	w.Applied(1, 1)
	w.Heard()
	w.Failed("watch", errors.New("boom"))
	w.Reachable(true)
	invalidRecords.WithLabelValues(server, zones).Inc()
	cnameClashes.WithLabelValues(server, zones).Set(1)
	transfers.WithLabelValues(server, zones, "full").Inc()
	notifies.WithLabelValues(server, zones, "ok").Inc()

	p := &publishMetrics{server: server, owner: owner, desired: source.NewDesired()}
	p.atZero([]string{"HTTPRoute"}, []string{"HTTPRoute"})
	p.KindServed("HTTPRoute", "", true)
	p.Rejected("HTTPRoute", source.CauseConflict)
	p.Leading(true)
	p.Committed(1, 1)
	p.Conflict(plan.Conflict{})
	p.Skipped(plan.Skip{Reason: plan.ReasonPolicy})
	p.Failed("web.example.org", errors.New("boom"))
	p.Planned(plan.Change{})
	p.Adopted(1)
	p.Problems(1, 1)
	p.Synced(time.Now())
	p.Propagated("web.example.org", time.Millisecond)
	p.EtcdReachable(true)
}

// Every series carries the server label, and forgetting a block's series forgets all of them
// and nothing of another block's: the lists of forgetServeSeries and forgetPublishSeries name
// every metric.
func TestEverySeriesIsLabelledAndForgottenByServer(t *testing.T) {
	const gone, kept = "dns://:10531", "dns://:10532"
	everySeries(gone, "forget.test.", "forget")
	everySeries(kept, "forget.test.", "forget")
	t.Cleanup(func() {
		forgetServeSeries(kept, "forget.test.")
		forgetPublishSeries(kept, "forget")
	})

	before := gatewaydnsSeries(t)
	for name, series := range before {
		for _, labels := range series {
			if _, ok := labels["server"]; !ok {
				t.Errorf("%s%v has no server label", name, labels)
			}
		}
	}

	forgetServeSeries(gone, "forget.test.")
	forgetPublishSeries(gone, "forget")
	after := gatewaydnsSeries(t)
	for name := range before {
		var goneLeft, keptLeft int
		for _, labels := range after[name] {
			switch labels["server"] {
			case gone:
				goneLeft++
			case kept:
				keptLeft++
			}
		}
		if goneLeft > 0 {
			t.Errorf("%s: %d series of the forgotten server left", name, goneLeft)
		}
		if keptLeft == 0 {
			t.Errorf("%s: the other server's series were forgotten too", name)
		}
	}
}

// A reload of a server block shares its feed and publisher (same key); the same stanza in a
// block of another address has its own, whose series carry that address.
func TestFeedAndPublisherKeysHoldTheServer(t *testing.T) {
	parseIn := func(key string) *config {
		t.Helper()
		c := caddy.NewTestController("dns", "gatewaydns {\n endpoint http://127.0.0.1:1\n owner eu1\n}")
		c.ServerBlockKeys = []string{key}
		cfg, err := parse(c)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	a, reloaded, other := parseIn("dns://openmcp.cluster.:1053"), parseIn("dns://openmcp.cluster.:1053"), parseIn("dns://openmcp.cluster.:1054")
	if a.feedKey() != reloaded.feedKey() || a.publishKey() != reloaded.publishKey() {
		t.Error("the same stanza in the same server block does not share its feed and publisher across a reload")
	}
	if a.feedKey() == other.feedKey() || a.publishKey() == other.publishKey() {
		t.Error("server blocks on other ports share a feed or a publisher: their series would mix")
	}
}
