package e2e

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatewaydns/gatewaydns/internal/promtext"
)

// A test names a series by the labels it cares about (promtext's selectors), e.g.
// `coredns_gatewaydns_writer_leader{owner="eu1"}`: the exported series carries more (server),
// whose values depend on the ports a test picked.

// The series the tests of both roles watch: fill LeaderOf in with the owner.
const (
	LeaderOf    = `coredns_gatewaydns_writer_leader{owner="%s"}`
	ReachableOf = `coredns_gatewaydns_etcd_reachable{zones="openmcp.cluster."}`
)

// IsOne and IsZero are the conditions of a gauge that is a yes or a no.
func IsOne(v float64) bool  { return v == 1 }
func IsZero(v float64) bool { return v == 0 }

// Samples reads every sample of a /metrics body; a body that is not the text format fails the
// test.
func Samples(t testing.TB, body string) []promtext.Sample {
	t.Helper()
	s, err := promtext.Parse(body)
	if err != nil {
		t.Fatalf("/metrics: %v\n%s", err, body)
	}
	return s
}

// CheckSeries fails the test unless body holds exactly one series named by selector, with the
// value want.
func CheckSeries(t testing.TB, body, selector string, want float64) {
	t.Helper()
	switch m := promtext.Matching(body, selector); {
	case len(m) != 1:
		t.Errorf("metrics hold %d series %s, want one", len(m), selector)
	case m[0].Value != want:
		t.Errorf("%s = %v, want %v", selector, m[0].Value, want)
	}
}

// CheckExported fails the test unless body holds a series named by selector.
func CheckExported(t testing.TB, body, selector string) {
	t.Helper()
	if len(promtext.Matching(body, selector)) == 0 {
		t.Errorf("metrics lack %s", selector)
	}
}

// MetricSum sums the samples (counters and gauges) of a metric of this process's default
// registry whose labels include every label of want: the series of a CoreDNS started in
// this process (StartCoreDNS).
func MetricSum(t testing.TB, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	Metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue Metrics
				}
			}
			if c := m.GetCounter(); c != nil {
				sum += c.GetValue()
			}
			if g := m.GetGauge(); g != nil {
				sum += g.GetValue()
			}
		}
	}
	return sum
}
