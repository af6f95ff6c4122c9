package main

import (
	"fmt"

	"github.com/gatewaydns/gatewaydns/internal/promtext"
)

// etcdCounters are etcd's own counters of what its clients asked.
type etcdCounters struct {
	txns, puts, keysPut float64 // Txn RPCs, Put RPCs, keys written (by both)
}

func readEtcdCounters(clientURL string) (etcdCounters, error) {
	text, err := promtext.Scrape(nil, clientURL+"/metrics")
	if err != nil {
		return etcdCounters{}, fmt.Errorf("etcd: %w", err)
	}
	var c etcdCounters
	c.txns, _ = promtext.Sum(text, `grpc_server_started_total{grpc_method="Txn"}`)
	c.puts, _ = promtext.Sum(text, `grpc_server_started_total{grpc_method="Put"}`)
	c.keysPut, _ = promtext.Sum(text, "etcd_mvcc_put_total")
	return c, nil
}

func (c etcdCounters) minus(o etcdCounters) etcdCounters {
	return etcdCounters{c.txns - o.txns, c.puts - o.puts, c.keysPut - o.keysPut}
}
