package kubesource

import (
	"k8s.io/client-go/dynamic"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
)

// The informers of the Gateway API kinds and of DNSEndpoints list their initial state in one
// LIST rather than stream it as watch events (client-go's WatchListClient, on by default since
// 1.35): client-go asks a client whether it supports the streaming semantics, and these say no.
// They are custom resources, which the API server sends as JSON only. Streamed, every object
// is a watch event: its envelope is parsed, then the object, each twice over (once to find its
// kind), and the API server deep-copies and encodes each one alone. A list is parsed as a
// whole. A writer starting on 100k HTTPRoutes used 11 s of CPU listing them against 22 s
// streaming them (make bench, phase W), and was ready in half the time. The core kinds come as
// protobuf, where streaming costs little, and keep the default.
type listingGatewayClient struct{ gwclient.Interface }

// IsWatchListSemanticsUnSupported is what client-go's watchlist.DoesClientNotSupportWatchListSemantics asks.
func (listingGatewayClient) IsWatchListSemanticsUnSupported() bool { return true }

// listingDynamicClient is listingGatewayClient for the dynamic client (DNSEndpoints).
type listingDynamicClient struct{ dynamic.Interface }

// IsWatchListSemanticsUnSupported is what client-go's watchlist.DoesClientNotSupportWatchListSemantics asks.
func (listingDynamicClient) IsWatchListSemanticsUnSupported() bool { return true }
