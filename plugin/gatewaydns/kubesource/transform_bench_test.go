package kubesource

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// benchRouteJSON is an HTTPRoute as the API server sends it: defaults filled in, two managed
// fields entries (the spec's and the status's), accepted by its Gateway.
const benchRouteJSON = `{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{
"creationTimestamp":"2026-11-25T18:15:00Z","generation":1,"managedFields":[
{"apiVersion":"gateway.networking.k8s.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:hostnames":{},"f:parentRefs":{},"f:rules":{}}},"manager":"bench","operation":"Update","time":"2026-11-25T18:15:00Z"},
{"apiVersion":"gateway.networking.k8s.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{".":{},"f:parents":{}}},"manager":"bench","operation":"Update","subresource":"status","time":"2026-11-25T18:15:00Z"}],
"name":"route-%d","namespace":"bench-w","resourceVersion":"%d","uid":"6f1c3e4a-1b2c-4d5e-8f90-%012d"},
"spec":{"hostnames":["r%d.wt.openmcp.cluster"],"parentRefs":[{"group":"gateway.networking.k8s.io","kind":"Gateway","name":"gw-%d","namespace":"bench-w"}],
"rules":[{"matches":[{"path":{"type":"PathPrefix","value":"/"}}]}]},
"status":{"parents":[{"conditions":[
{"lastTransitionTime":"2026-11-25T18:15:00Z","message":"Accepted","observedGeneration":1,"reason":"Accepted","status":"True","type":"Accepted"},
{"lastTransitionTime":"2026-11-25T18:15:00Z","message":"Resolved","observedGeneration":1,"reason":"ResolvedRefs","status":"True","type":"ResolvedRefs"}],
"controllerName":"example.com/gateway-controller","parentRef":{"group":"gateway.networking.k8s.io","kind":"Gateway","name":"gw-%d","namespace":"bench-w"}}]}}`

// BenchmarkRouteCacheMemory reports the live heap that 100k HTTPRoutes take in an informer's
// store after the transform, indexes included, per route: the writer's share of make bench's
// phase W that the transform decides.
func BenchmarkRouteCacheMemory(b *testing.B) {
	const n = 100000
	docs := make([][]byte, n)
	for i := range n {
		docs[i] = fmt.Appendf(nil, benchRouteJSON, i, 1000+i, i, i, i%4, i%4)
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	s := newSlimmer(&source.Config{})
	var perRoute float64
	for b.Loop() {
		before := heap()
		store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, routeIndexers())
		for _, doc := range docs {
			var r gatewayv1.HTTPRoute
			if err := json.Unmarshal(doc, &r); err != nil {
				b.Fatal(err)
			}
			slim, _ := s.Transform(&r)
			if err := store.Add(slim); err != nil {
				b.Fatal(err)
			}
		}
		perRoute = float64(heap()-before) / n
		runtime.KeepAlive(store)
	}
	b.ReportMetric(perRoute, "B/route")
}
