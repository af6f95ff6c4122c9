package main

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// metricSum adds up every sample of metric name in a Prometheus text exposition whose labels
// include all of want (name="value" pairs). ok is false when no sample matched.
func metricSum(text, name string, want ...string) (sum float64, ok bool) {
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		labels := ""
		if strings.HasPrefix(rest, "{") {
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				continue
			}
			labels, rest = rest[1:end], rest[end+1:]
		} else if !strings.HasPrefix(rest, " ") {
			continue // a longer name
		}
		match := true
		for _, w := range want {
			if !strings.Contains(","+labels+",", ","+w+",") {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		sum += v
		ok = true
	}
	return sum, ok
}

// scrape fetches a /metrics page.
func scrape(url string) (string, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(url)
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

// etcdCounters are etcd's own counters of what its clients asked.
type etcdCounters struct {
	txns, puts, keysPut float64 // Txn RPCs, Put RPCs, keys written (by both)
}

func readEtcdCounters(clientURL string) (etcdCounters, error) {
	text, err := scrape(clientURL + "/metrics")
	if err != nil {
		return etcdCounters{}, fmt.Errorf("etcd: %w", err)
	}
	var c etcdCounters
	c.txns, _ = metricSum(text, "grpc_server_started_total", `grpc_method="Txn"`)
	c.puts, _ = metricSum(text, "grpc_server_started_total", `grpc_method="Put"`)
	c.keysPut, _ = metricSum(text, "etcd_mvcc_put_total")
	return c, nil
}

func (c etcdCounters) minus(o etcdCounters) etcdCounters {
	return etcdCounters{c.txns - o.txns, c.puts - o.puts, c.keysPut - o.keysPut}
}
