package kubesource

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// Options.DiscoveredKinds names exactly the kinds the first discovery reports, served or not;
// SourceKinds adds the core kinds read: an observer that creates a series per kind ahead of
// time creates those it will update, and no others.
func TestDiscoveredKindsAreTheKindsReported(t *testing.T) {
	for _, tc := range []struct {
		name        string
		kinds       []string
		wantSources []string
	}{
		{"default kinds", nil, []string{source.KindGateway, source.KindListenerSet, source.KindHTTPRoute,
			source.KindGRPCRoute, source.KindTLSRoute, source.KindTCPRoute, source.KindUDPRoute, source.KindIngress}},
		{"one route kind and Services", []string{source.KindTLSRoute, source.KindService},
			[]string{source.KindGateway, source.KindListenerSet, source.KindTLSRoute, source.KindService}},
		{"DNSEndpoints", []string{source.KindDNSEndpoint},
			[]string{source.KindGateway, source.KindListenerSet, source.KindDNSEndpoint}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lists resourceLists
			lists.set(map[string][]string{"gateway.networking.k8s.io/v1": {"gateways", "httproutes", "tlsroutes"}})
			obs := newRecordingObserver()
			opts := Options{Kinds: tc.kinds, Observer: obs}
			w := NewForClients(kubefake.NewClientset(), gwfake.NewSimpleClientset(), opts) //nolint:staticcheck // see TestWatcherWithFakeClients
			w.dyn = dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
			w.resources = lists.get
			before := opts.DiscoveredKinds()
			if got := opts.SourceKinds(); !sameSet(got, tc.wantSources) {
				t.Errorf("SourceKinds = %v, want %v", got, tc.wantSources)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer w.Stop()
			defer cancel()
			if err := w.Start(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case <-w.discovered:
			case <-time.After(10 * time.Second):
				t.Fatal("no discovery")
			}
			obs.mu.Lock()
			reported := slices.Collect(maps.Keys(obs.served))
			obs.mu.Unlock()
			if !sameSet(before, reported) {
				t.Errorf("DiscoveredKinds = %v before the discovery, which reported %v", before, reported)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}

// Only a kind the sources option names is one whose absence is a mistake: the default kinds,
// and ListenerSet (never named), may be missing from a cluster without an alert.
func TestNamedKindsAreThoseTheSourcesOptionNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kinds []string
		named []string
	}{
		{"default kinds", nil, nil},
		{"a route kind names its Gateway too", []string{source.KindTCPRoute},
			[]string{source.KindGateway, source.KindTCPRoute}},
		{"DNSEndpoints and Ingresses name no Gateway", []string{source.KindDNSEndpoint, source.KindIngress},
			[]string{source.KindDNSEndpoint, source.KindIngress}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Kinds: tc.kinds}
			var named []string
			for _, k := range opts.SourceKinds() {
				if opts.Named(k) {
					named = append(named, k)
				}
			}
			if !sameSet(named, tc.named) {
				t.Errorf("named %v, want %v", named, tc.named)
			}
		})
	}
}
