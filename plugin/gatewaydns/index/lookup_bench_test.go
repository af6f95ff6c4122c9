package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// BenchmarkAppendAddressesScale is the plain-address lookup of the bulk of questions at 1k and
// at 100k names, the names asked in random order as dnsperf asks them. make bench's phase S
// holds the throughput at 100k to 0.9x that at 1k; the difference between these two is what
// the index adds to that gap (cache misses in a larger tree), without the server around it.
func BenchmarkAppendAddressesScale(b *testing.B) {
	for _, n := range []int{1000, 100_000} {
		kvs := make([]record.KV, n)
		names := make([]string, n)
		for i := range n {
			names[i] = fmt.Sprintf("h%d.bench.openmcp.cluster.", i)
			kvs[i] = record.KV{Key: fmt.Sprintf("/skydns/cluster/openmcp/bench/h%d/3e6bee2e", i),
				Value: fmt.Appendf(nil, `{"host":"10.%d.%d.%d","ttl":300}`, i>>16&255, i>>8&255, i&255)}
		}
		slices.SortFunc(kvs, func(a, b record.KV) int { return strings.Compare(a.Key, b.Key) }) // as etcd reads them
		ix := New(Options{})
		ix.Load(ix.Root(), kvs)
		rand.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var buf [8]Address
			var qname []byte
			i := 0
			for b.Loop() {
				// A server asks for a name it has just unpacked, in memory the cache holds;
				// names[i], one of 100k strings, would be a miss of its own.
				qname = append(qname[:0], names[i%len(names)]...)
				addrs, ok, err := ix.AppendAddresses(buf[:0], string(qname), dns.TypeA)
				if !ok || err != nil || len(addrs) != 1 {
					b.Fatalf("%s: %v %v %v", qname, addrs, ok, err)
				}
				i++
			}
		})
	}
}
