package index

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// BenchmarkIndexMemory reports the live heap an index of 100k and of 1M records holds, per
// record, as loaded and after every name has been asked for once (which caches the answer set
// of a name that is not a few plain addresses), in the layout the writer and external-dns use:
// one key below each name; and how long the load took. The values are make bench's (an
// address and a TTL), or the writer's, which also name their owner and the object behind each
// record. make bench measures the whole process's RSS; this is the part of it that the
// index's data structures decide.
func BenchmarkIndexMemory(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			indexMemory(b, n, func(i int) string { return fmt.Sprintf(`{"host":"10.%d.%d.%d","ttl":300}`, i>>16&255, i>>8&255, i&255) })
		})
	}
	b.Run("writer/1000000", func(b *testing.B) {
		indexMemory(b, 1_000_000, func(i int) string {
			return fmt.Sprintf(`{"host":"10.%d.%d.%d","ttl":300,"targetstrip":1,"owner":"c%d","sources":["HTTPRoute/default/r%d"]}`,
				i>>16&255, i>>8&255, i&255, i/1000, i)
		})
	})
	// CNAMEs are not plain addresses: once asked for, each name's answer set is cached.
	b.Run("cname/100000", func(b *testing.B) {
		indexMemory(b, 100_000, func(i int) string { return fmt.Sprintf(`{"host":"lb-%d.elb.example.com","ttl":300}`, i) })
	})
}

// benchNames are n names hN.bench.openmcp.cluster., each with one record whose value is
// value(i), in the layout the writer and external-dns use (one key below each name), the keys
// sorted as etcd reads them.
func benchNames(n int, value func(i int) string) (kvs []record.KV, names []string) {
	kvs = make([]record.KV, n)
	names = make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("h%d.bench.openmcp.cluster.", i)
		kvs[i] = record.KV{Key: fmt.Sprintf("/skydns/cluster/openmcp/bench/h%d/3e6bee2e", i), Value: []byte(value(i))}
	}
	slices.SortFunc(kvs, func(a, b record.KV) int { return strings.Compare(a.Key, b.Key) })
	return kvs, names
}

func indexMemory(b *testing.B, n int, value func(i int) string) {
	kvs, names := benchNames(n, value)
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var loaded, queried float64
	var took time.Duration
	for b.Loop() {
		before := heap()
		start := time.Now()
		ix := New(Options{})
		ix.Load(ix.Root(), kvs)
		took = time.Since(start)
		loaded = float64(heap()-before) / float64(n)
		for _, name := range names {
			if _, ok, err := ix.Addresses(name, dns.TypeA); err != nil {
				b.Fatalf("%s: %v", name, err)
			} else if !ok {
				if _, _, err := ix.records(name, dns.TypeA, false, answered, nil); err != nil {
					b.Fatalf("%s: %v", name, err)
				}
			}
		}
		queried = float64(heap()-before) / float64(n)
		runtime.KeepAlive(ix)
	}
	b.ReportMetric(loaded, "B/record-loaded")
	b.ReportMetric(queried, "B/record-queried")
	b.ReportMetric(took.Seconds()*1000, "ms/load")
}
