package gatewaydns

import (
	"errors"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"

	"github.com/gatewaydns/gatewaydns/internal/seriescheck"
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

// everySeries makes every series of a server block's serve role, those exported at zero and
// those made by what happens.
func everySeries(server, zones string) {
	metricsAtZero(server, zones)
	w := watchMetrics{server: server, zones: zones, count: func() int { return 1 }}
	w.Resynced("start", 1, time.Millisecond)
	w.Applied(1, 1)
	w.Heard()
	w.Failed("watch", errors.New("boom"))
	w.Reachable(true)
	invalidRecords.WithLabelValues(server, zones).Inc()
	cnameClashes.WithLabelValues(server, zones).Set(1)
}

// Every series of the serve role carries the server label, and forgetting a block's series
// forgets all of them and nothing of another block's: the list of forgetServeSeries names
// every metric. (The publish role's: package publish.)
func TestEverySeriesIsLabelledAndForgottenByServer(t *testing.T) {
	seriescheck.ForgottenByServer(t, "zones",
		func(server string) { everySeries(server, "forget.test.") },
		func(server string) { forgetServeSeries(server, "forget.test.") })
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
	if a.feedKey() != reloaded.feedKey() || a.publish.Key() != reloaded.publish.Key() {
		t.Error("the same stanza in the same server block does not share its feed and publisher across a reload")
	}
	if a.feedKey() == other.feedKey() || a.publish.Key() == other.publish.Key() {
		t.Error("server blocks on other ports share a feed or a publisher: their series would mix")
	}
}
