package tests

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A test names a series by the labels it cares about, e.g.
// `coredns_gatewaydns_writer_leader{owner="eu1"}`: the exported series carries more (server),
// whose values depend on the ports a test picked.

var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// splitSeries splits a series as the text format writes it, or as a test names it,
// `name{label="value",...}`, into its name and labels.
func splitSeries(series string) (name string, labels map[string]string) {
	name, rest, _ := strings.Cut(series, "{")
	labels = map[string]string{}
	for _, m := range labelPair.FindAllStringSubmatch(rest, -1) {
		labels[m[1]] = m[2]
	}
	return name, labels
}

// exportedSeries is one line of a /metrics body.
type exportedSeries struct {
	name   string
	labels map[string]string
	value  float64
}

// parseMetrics reads the series of a /metrics body in the text format.
func parseMetrics(body string) []exportedSeries {
	var out []exportedSeries
	for _, line := range strings.Split(body, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		series, rest, ok := strings.Cut(line, " ")
		if strings.Contains(series, "{") { // a label value may hold spaces (zones)
			end := strings.LastIndexByte(line, '}')
			series, rest, ok = line[:end+1], line[end+1:], end >= 0
		}
		fields := strings.Fields(rest)
		if !ok || len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		name, labels := splitSeries(series)
		out = append(out, exportedSeries{name: name, labels: labels, value: v})
	}
	return out
}

// matching returns the series of body that selector names: its name, and at least its labels.
func matching(body, selector string) []exportedSeries {
	name, want := splitSeries(selector)
	var out []exportedSeries
Series:
	for _, s := range parseMetrics(body) {
		if s.name != name {
			continue
		}
		for k, v := range want {
			if s.labels[k] != v {
				continue Series
			}
		}
		out = append(out, s)
	}
	return out
}

// seriesValue is the value of the one series of body that selector names. ok is false when
// none or several match; the value is then NaN, which no condition of a test holds for.
func seriesValue(body, selector string) (v float64, ok bool) {
	if m := matching(body, selector); len(m) == 1 {
		return m[0].value, true
	}
	return math.NaN(), false
}

// checkSeries fails the test unless body holds exactly one series named by selector, with the
// value want.
func checkSeries(t *testing.T, body, selector string, want float64) {
	t.Helper()
	switch m := matching(body, selector); {
	case len(m) != 1:
		t.Errorf("metrics hold %d series %s, want one", len(m), selector)
	case m[0].value != want:
		t.Errorf("%s = %v, want %v", selector, m[0].value, want)
	}
}

// checkExported fails the test unless body holds a series named by selector.
func checkExported(t *testing.T, body, selector string) {
	t.Helper()
	if len(matching(body, selector)) == 0 {
		t.Errorf("metrics lack %s", selector)
	}
}

func TestSeriesSelectors(t *testing.T) {
	body := `# HELP x y
coredns_gatewaydns_index_records{server="dns://:1053",zones="a. b."} 3
coredns_gatewaydns_index_records{server="dns://:1054",zones="a. b."} 4
coredns_gatewaydns_writer_leader{owner="eu1",server="dns://:1053"} 1
coredns_gatewaydns_writer_leader_other{owner="eu1",server="dns://:1053"} 7
process_open_fds 12
`
	for _, tc := range []struct {
		selector string
		want     float64
		ok       bool
	}{
		{`coredns_gatewaydns_writer_leader{owner="eu1"}`, 1, true},
		{`coredns_gatewaydns_index_records{server="dns://:1054",zones="a. b."}`, 4, true},
		{`coredns_gatewaydns_index_records{zones="a. b."}`, math.NaN(), false}, // two servers
		{`coredns_gatewaydns_writer_leader{owner="us1"}`, math.NaN(), false},
		{`process_open_fds`, 12, true},
	} {
		v, ok := seriesValue(body, tc.selector)
		if ok != tc.ok || (ok && v != tc.want) || (!ok && !math.IsNaN(v)) {
			t.Errorf("%s: %v %v, want %v %v", tc.selector, v, ok, tc.want, tc.ok)
		}
	}
}
