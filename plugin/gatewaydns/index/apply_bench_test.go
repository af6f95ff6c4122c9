package index

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// writerKV is record i of a landscape in the writer's layout: a thousand names per cluster,
// each value as the writer writes it.
func writerKV(i, gen int) record.KV {
	return record.KV{
		Key: fmt.Sprintf("/skydns/cluster/openmcp/c%d/h%d/3e6bee2e", i/1000, i),
		Value: fmt.Appendf(nil, `{"host":"10.%d.%d.%d","ttl":300,"targetstrip":1,"owner":"c%d","sources":["HTTPRoute/default/r%d"]}`,
			gen&255, i>>8&255, i&255, i/1000, i),
		Created: int64(i + 1),
	}
}

// BenchmarkApply is the rate at which the index applies watch responses of 100 changes (new
// values of existing keys, at one revision each) to an index of 100k and of 1M records, in
// changes per second: alone, and while two goroutines ask for its names as fast as they can
// (queries/s).
func BenchmarkApply(b *testing.B) {
	for _, tc := range []struct {
		n      int
		askers int
	}{{100_000, 0}, {100_000, 2}, {1_000_000, 0}, {1_000_000, 2}} {
		n := tc.n
		b.Run(fmt.Sprintf("%d/askers=%d", n, tc.askers), func(b *testing.B) {
			kvs := make([]record.KV, n)
			for i := range kvs {
				kvs[i] = writerKV(i, 0)
				kvs[i].Revision = int64(i + 1)
			}
			ix := New(Options{})
			ix.Load(ix.Root(), kvs)
			const batch = 100
			batches := make([][]record.Change, 1000)
			rev := int64(n)
			for j := range batches {
				batches[j] = make([]record.Change, batch)
				for k := range batches[j] {
					rev++
					kv := writerKV((j*batch+k)*7919%n, j+1)
					kv.Revision = rev
					batches[j][k] = record.Change{KV: kv}
				}
			}
			var stop atomic.Bool
			var asked atomic.Int64
			var wg sync.WaitGroup
			for a := range tc.askers {
				wg.Go(func() {
					var buf [8]Address
					for i := a; !stop.Load(); i += 7919 {
						name := fmt.Sprintf("h%d.c%d.openmcp.cluster.", i%n, i%n/1000)
						if _, ok, err := ix.AppendAddresses(buf[:0], name, dns.TypeA); !ok || err != nil {
							b.Errorf("%s: ok %v, err %v", name, ok, err)
							return
						}
						asked.Add(1)
					}
				})
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				ix.Apply(batches[i%len(batches)])
			}
			stop.Store(true)
			wg.Wait()
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "changes/s")
			b.ReportMetric(float64(asked.Load())/b.Elapsed().Seconds(), "queries/s")
		})
	}
}
