package index

import (
	"fmt"
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// BenchmarkZoneDiff is what building an IXFR's names costs, by how many keys changed since the
// secondary's serial, in a zone of 100k names in the writer's layout (writerKV): the read
// lock is held that long, so writers, and the queries behind a waiting writer, wait as long.
func BenchmarkZoneDiff(b *testing.B) {
	const n = 100_000
	kvs := make([]record.KV, n)
	for i := range kvs {
		kvs[i] = writerKV(i, 0)
		kvs[i].Revision = int64(i + 1)
	}
	for _, changed := range []int{1, 100, 1000, 10_000} {
		b.Run(fmt.Sprint("changed=", changed), func(b *testing.B) {
			ix := New(Options{Prefixes: []string{"/skydns/cluster/openmcp/"}})
			ix.Load("/skydns/cluster/openmcp/", kvs)
			serial := uint32(n)
			for i := range changed {
				kv := writerKV(i*(n/changed), 1)
				kv.Revision = int64(n + 1 + i)
				ix.Apply([]record.Change{{KV: kv}})
			}
			b.ResetTimer()
			for b.Loop() {
				if _, _, ok := ix.ZoneDiff("openmcp.cluster.", serial, nil); !ok {
					b.Fatal("no difference")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(changed), "us/key")
		})
	}
}
