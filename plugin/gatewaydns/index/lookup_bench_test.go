package index

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/miekg/dns"
)

// BenchmarkAppendAddressesScale is the plain-address lookup of the bulk of questions at 1k and
// at 100k names, the names asked in random order as dnsperf asks them. make bench's phase S
// holds the throughput at 100k to 0.9x that at 1k; the difference between these two is what
// the index adds to that gap (cache misses in a larger tree), without the server around it.
func BenchmarkAppendAddressesScale(b *testing.B) {
	for _, n := range []int{1000, 100_000} {
		kvs, names := benchNames(n, func(i int) string { return fmt.Sprintf(`{"host":"10.%d.%d.%d","ttl":300}`, i>>16&255, i>>8&255, i&255) })
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
