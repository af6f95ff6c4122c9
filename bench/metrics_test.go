package main

import "testing"

func TestMetricSum(t *testing.T) {
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
	tests := []struct {
		name   string
		metric string
		want   []string
		sum    float64
		ok     bool
	}{
		{"by label", "grpc_server_started_total", []string{`grpc_method="Txn"`}, 13, true},
		{"two labels", "grpc_server_started_total", []string{`grpc_method="Txn"`, `grpc_service="other"`}, 1, true},
		{"no labels, not a longer name", "etcd_mvcc_put_total", nil, 501, true},
		{"sum over ops", "coredns_gatewaydns_writer_writes_total", []string{`owner="bench-w"`}, 502, true},
		{"no match", "coredns_gatewaydns_writer_writes_total", []string{`owner="nobody"`}, 0, false},
		{"missing metric", "nope", nil, 0, false},
	}
	for _, tt := range tests {
		sum, ok := metricSum(text, tt.metric, tt.want...)
		if sum != tt.sum || ok != tt.ok {
			t.Errorf("%s: metricSum = %v, %v; want %v, %v", tt.name, sum, ok, tt.sum, tt.ok)
		}
	}
}
