package record

import (
	"testing"

	"github.com/gatewaydns/gatewaydns/internal/cpuuse"
)

// BenchmarkDecode is the cost of reading one value as the index loads a zone, for the value a
// writer writes without a steering policy (the bulk of every zone) and, once steering exists,
// with one. The fast decoder (fastvalue.go) must stay as fast for the first.
func BenchmarkDecode(b *testing.B) {
	for _, bc := range []struct{ name, value string }{
		{"plain", `{"host":"10.0.0.1","ttl":60,"targetstrip":1,"owner":"prod.eu1","sources":["HTTPRoute/shop/web"]}`},
		{"steering", `{"host":"10.0.0.1","ttl":60,"targetstrip":1,"owner":"prod.eu1","sources":["HTTPRoute/shop/web"],"steering":{"weight":90,"priority":1,"healthCheck":"tcp://:443"}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			value := []byte(bc.value)
			b.ReportAllocs()
			defer cpuuse.PerOp(b)()
			for b.Loop() {
				if _, err := Decode("/skydns/cluster/openmcp/eu1/web/3e6bee2e", value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
