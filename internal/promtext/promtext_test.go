package promtext

import (
	"math"
	"testing"
)

func TestValueNamesOneSampleByItsLabels(t *testing.T) {
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
		v, ok := Value(body, tc.selector)
		if ok != tc.ok || (ok && v != tc.want) || (!ok && !math.IsNaN(v)) {
			t.Errorf("%s: %v %v, want %v %v", tc.selector, v, ok, tc.want, tc.ok)
		}
	}
}

func TestSumAddsUpTheSamplesASelectorNames(t *testing.T) {
	text := `# HELP grpc_server_started_total Total number of RPCs started on the server.
grpc_server_started_total{grpc_method="Txn",grpc_service="etcdserverpb.KV",grpc_type="unary"} 12
grpc_server_started_total{grpc_method="Put",grpc_service="etcdserverpb.KV",grpc_type="unary"} 3
grpc_server_started_total{grpc_method="Txn",grpc_service="other",grpc_type="unary"} 1
etcd_mvcc_put_total 501
etcd_mvcc_put_total_extra 7
coredns_gatewaydns_writer_writes_total{op="put",owner="bench-w"} 500
coredns_gatewaydns_writer_writes_total{op="delete",owner="bench-w"} 2
coredns_gatewaydns_writer_writes_total{op="put",owner="other"} 9
`
	for _, tc := range []struct {
		name     string
		selector string
		sum      float64
		ok       bool
	}{
		{"by label", `grpc_server_started_total{grpc_method="Txn"}`, 13, true},
		{"two labels", `grpc_server_started_total{grpc_method="Txn",grpc_service="other"}`, 1, true},
		{"no labels, not a longer name", "etcd_mvcc_put_total", 501, true},
		{"sum over ops", `coredns_gatewaydns_writer_writes_total{owner="bench-w"}`, 502, true},
		{"no match", `coredns_gatewaydns_writer_writes_total{owner="nobody"}`, 0, false},
		{"missing metric", "nope", 0, false},
	} {
		sum, ok := Sum(text, tc.selector)
		if sum != tc.sum || ok != tc.ok {
			t.Errorf("%s: Sum = %v, %v; want %v, %v", tc.name, sum, ok, tc.sum, tc.ok)
		}
	}
}

// A histogram's and a summary's samples are named as the text names them.
func TestParseGivesEveryLineOfAHistogramAndASummary(t *testing.T) {
	text := `# TYPE coredns_dns_request_duration_seconds histogram
coredns_dns_request_duration_seconds_bucket{server="dns://:53",le="0.005"} 3
coredns_dns_request_duration_seconds_bucket{server="dns://:53",le="+Inf"} 4
coredns_dns_request_duration_seconds_sum{server="dns://:53"} 0.25
coredns_dns_request_duration_seconds_count{server="dns://:53"} 4
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="0.5"} 0.001
go_gc_duration_seconds_sum 0.5
go_gc_duration_seconds_count 7
`
	samples, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		selector string
		want     float64
	}{
		{`coredns_dns_request_duration_seconds_bucket{le="0.005"}`, 3},
		{`coredns_dns_request_duration_seconds_bucket{le="+Inf"}`, 4},
		{`coredns_dns_request_duration_seconds_sum`, 0.25},
		{`coredns_dns_request_duration_seconds_count{server="dns://:53"}`, 4},
		{`go_gc_duration_seconds{quantile="0.5"}`, 0.001},
		{`go_gc_duration_seconds_count`, 7},
	} {
		m := Select(samples, tc.selector)
		if len(m) != 1 || m[0].Value != tc.want {
			t.Errorf("%s: %v, want one sample of %v", tc.selector, m, tc.want)
		}
	}
	if m := Select(samples, `coredns_dns_request_duration_seconds_count`); len(m) != 1 || m[0].Family != "coredns_dns_request_duration_seconds" {
		t.Errorf("the _count sample's family: %v", m)
	}
}

// A scrape that is not the text format names nothing, rather than what a lenient reading guessed.
func TestMatchingOfABodyThatIsNotTheTextFormat(t *testing.T) {
	if m := Matching("<html>404 page not found</html>\n", "process_open_fds"); len(m) != 0 {
		t.Errorf("matched %v", m)
	}
}
