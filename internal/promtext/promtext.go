// Package promtext reads what a /metrics endpoint serves, the Prometheus text format, with
// Prometheus's own parser (prometheus/common/expfmt): the one reading of a scrape that the
// tests, make bench and make demo share.
//
// A selector names samples as PromQL does, by a name and the labels that matter:
// `coredns_gatewaydns_writer_leader{owner="eu1"}` matches that metric's samples whose labels
// include owner="eu1", whatever else they carry (the server label, which depends on the
// ports a test picked).
package promtext

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one line of a scrape.
type Sample struct {
	Family string            // the metric family: a histogram's name without _bucket, _sum, _count
	Name   string            // the sample's name, as the text writes it
	Labels map[string]string // a bucket's le and a quantile's quantile included
	Value  float64
}

// Parse reads every sample of a scrape, as the text lists them: a histogram gives its buckets
// (le), _sum and _count, a summary its quantiles, _sum and _count.
func Parse(text string) ([]Sample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	var out []Sample
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			add := func(suffix string, v float64, extra ...string) {
				ls := labels
				if len(extra) > 0 {
					ls = make(map[string]string, len(labels)+1)
					for k, v := range labels {
						ls[k] = v
					}
					ls[extra[0]] = extra[1]
				}
				out = append(out, Sample{Family: name, Name: name + suffix, Labels: ls, Value: v})
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				add("", m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add("", m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				add("", m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					add("_bucket", float64(b.GetCumulativeCount())+b.GetCumulativeCountFloat(), model.BucketLabel, formatFloat(b.GetUpperBound()))
				}
				add("_sum", h.GetSampleSum())
				add("_count", float64(h.GetSampleCount())+h.GetSampleCountFloat())
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					add("", q.GetValue(), model.QuantileLabel, formatFloat(q.GetQuantile()))
				}
				add("_sum", s.GetSampleSum())
				add("_count", float64(s.GetSampleCount()))
			}
		}
	}
	return out, nil
}

// formatFloat writes a bound as the text format does ("+Inf", "0.005").
func formatFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// splitSelector splits `name{label="value",...}` into its name and labels.
func splitSelector(selector string) (name string, labels map[string]string) {
	name, rest, _ := strings.Cut(selector, "{")
	labels = map[string]string{}
	for _, m := range labelPair.FindAllStringSubmatch(rest, -1) {
		v, err := strconv.Unquote(`"` + m[2] + `"`)
		if err != nil {
			v = m[2]
		}
		labels[m[1]] = v
	}
	return strings.TrimSpace(name), labels
}

// Select returns the samples that selector names: its name, and at least its labels.
func Select(samples []Sample, selector string) []Sample {
	name, want := splitSelector(selector)
	var out []Sample
Samples:
	for _, s := range samples {
		if s.Name != name {
			continue
		}
		for k, v := range want {
			if s.Labels[k] != v {
				continue Samples
			}
		}
		out = append(out, s)
	}
	return out
}

// Matching returns the samples of a scrape that selector names; none when text does not parse.
func Matching(text, selector string) []Sample {
	samples, err := Parse(text)
	if err != nil {
		return nil
	}
	return Select(samples, selector)
}

// Value is the value of the one sample of text that selector names. ok is false when none or
// several match; the value is then NaN, which no condition of a test holds for.
func Value(text, selector string) (v float64, ok bool) {
	if m := Matching(text, selector); len(m) == 1 {
		return m[0].Value, true
	}
	return math.NaN(), false
}

// Sum adds up the samples of text that selector names; ok is false when none matched.
func Sum(text, selector string) (sum float64, ok bool) {
	m := Matching(text, selector)
	for _, s := range m {
		sum += s.Value
	}
	return sum, len(m) > 0
}

// Scrape reads the page at url (a /metrics endpoint) with client (nil: one with a 5 s timeout).
func Scrape(client *http.Client, url string) (string, error) {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	resp, err := client.Get(url)
	if err != nil {
		return "", fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("scraping %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	return string(body), nil
}
