package source

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// BenchmarkDesiredMemory reports the live heap a Desired holds per route for 100k HTTPRoutes of
// one hostname each, attached to one of four Gateways, as make bench's phase W publishes them.
// make bench measures the writer's whole process; this is the part that Desired decides.
func BenchmarkDesiredMemory(b *testing.B) {
	const n = 100000
	targets := []string{"203.0.113.1", "203.0.113.2", "203.0.113.3", "203.0.113.4"}
	refs := make([]record.ObjectRef, n)
	claims := make([][]Claim, n)
	for i := range n {
		// Each object's strings are its own, as decoded from the API server's list.
		refs[i] = record.ObjectRef{Kind: KindHTTPRoute, Namespace: strings.Clone("bench-w"), Name: fmt.Sprintf("route-%d", i)}
		claims[i] = []Claim{{Name: fmt.Sprintf("r%d.wt.openmcp.cluster", i), Targets: []string{targets[i%4]}, Created: t0}}
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var perRoute float64
	for b.Loop() {
		before := heap()
		d := NewDesired()
		for i := range n {
			d.Set(refs[i], claims[i])
		}
		perRoute = float64(heap()-before) / n
		runtime.KeepAlive(d)
	}
	b.ReportMetric(perRoute, "B/route")
}
