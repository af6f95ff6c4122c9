package tests

import (
	"testing"

	"github.com/gatewaydns/gatewaydns/internal/promtext"
)

// A test names a series by the labels it cares about (promtext's selectors), e.g.
// `coredns_gatewaydns_writer_leader{owner="eu1"}`: the exported series carries more (server),
// whose values depend on the ports a test picked.

// samples reads every sample of a /metrics body; a body that is not the text format fails the
// test.
func samples(t *testing.T, body string) []promtext.Sample {
	t.Helper()
	s, err := promtext.Parse(body)
	if err != nil {
		t.Fatalf("/metrics: %v\n%s", err, body)
	}
	return s
}

// checkSeries fails the test unless body holds exactly one series named by selector, with the
// value want.
func checkSeries(t *testing.T, body, selector string, want float64) {
	t.Helper()
	switch m := promtext.Matching(body, selector); {
	case len(m) != 1:
		t.Errorf("metrics hold %d series %s, want one", len(m), selector)
	case m[0].Value != want:
		t.Errorf("%s = %v, want %v", selector, m[0].Value, want)
	}
}

// checkExported fails the test unless body holds a series named by selector.
func checkExported(t *testing.T, body, selector string) {
	t.Helper()
	if len(promtext.Matching(body, selector)) == 0 {
		t.Errorf("metrics lack %s", selector)
	}
}
