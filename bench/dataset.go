package main

import (
	"strings"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/benchdata"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// The dataset, its questions and mixes are benchdata's, which the plugin's in-process
// benchmarks share; these names keep the phases short.
const zone = benchdata.Zone

type (
	kv      = benchdata.KV
	query   = benchdata.Query
	dataset = benchdata.Dataset
	mix     = benchdata.Mix
)

var (
	mixBasic = benchdata.MixBasic
	mixFull  = benchdata.MixFull
	ipv4     = benchdata.IPv4
)

func newDataset(n int) *dataset { return benchdata.New(record.DefaultPrefix, n) }

// dnsperfInput is a dnsperf data file: one "name type" per line.
func dnsperfInput(qs []query) string {
	var b strings.Builder
	for _, q := range qs {
		b.WriteString(q.Name)
		b.WriteByte(' ')
		b.WriteString(q.Type)
		b.WriteByte('\n')
	}
	return b.String()
}

// loadDataset writes a dataset of n records under /path into the bench etcd, after clearing
// what an earlier run left there, and returns it with the time the writes took.
func (h *harness) loadDataset(path string, n int) (*dataset, time.Duration, error) {
	d := benchdata.New(path, n)
	ctx, cancel := h.ctx()
	defer cancel()
	if err := clearPrefix(ctx, h.cli, "/"+path+"/"); err != nil {
		return nil, 0, err
	}
	start := time.Now()
	if err := loadRecords(ctx, h.cli, d.Records, 8); err != nil {
		return nil, 0, err
	}
	return d, time.Since(start), nil
}
