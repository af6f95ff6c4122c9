// How the informers of the Gateway API kinds read: a LIST in pages, each page slimmed before
// the next is read, then a watch whose objects are slimmed as they come.

package kubesource

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
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

// listPageSize is how many objects one request of a paged list asks for (client-go's default).
const listPageSize = 500

type listFunc func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)

type watchFunc func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)

// listOf adapts a typed client's List to a listFunc.
func listOf[L runtime.Object](list func(context.Context, metav1.ListOptions) (L, error)) listFunc {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		l, err := list(ctx, opts)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}

// slimmedInformer is an informer whose list and watch hand on slimmed objects already: it
// takes no transform (startInformer).
type slimmedInformer struct{ cache.SharedIndexInformer }

// informer builds an informer of the objects that list and watch read, slimmed as they arrive.
//
// An informer's own list asks the API server for every object at once (resourceVersion 0,
// which the watch cache answers whole, whatever the limit) and keeps the whole response, then
// every decoded object, until the transform has run on the last one: for 100k HTTPRoutes some
// 260 MB of the writer's heap at its start (make bench, phase W), three times what their
// slim forms take. listPages asks for pages instead and slims each before it reads the next.
// client is asked whether the informer may stream its initial state (listingGatewayClient).
func (s *slimmer) informer(client any, list listFunc, watchObjects watchFunc, example runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return s.listPages(ctx, list, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := watchObjects(ctx, opts)
			if err != nil {
				return nil, err
			}
			return newSlimWatch(w, s.Transform), nil
		},
	}, client)
	return slimmedInformer{cache.NewSharedIndexInformerWithOptions(lw, example,
		cache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: indexers})}
}

// listPages lists what opts selects in pages of listPageSize, slims the objects of each page
// before the next is read, and returns them as one list at the resource version of the pages.
// The pages are read at the latest resource version: a paged list at any other is answered
// whole by the watch cache (0) or may have been compacted away; the latest is as new as any
// the reflector asks for. An API server of 1.34 or later serves the pages from its watch cache
// (KEP 4988), an older one from etcd. A continuation that expired fails the list; the
// reflector lists again.
func (s *slimmer) listPages(ctx context.Context, list listFunc, opts metav1.ListOptions) (runtime.Object, error) {
	opts.ResourceVersion, opts.ResourceVersionMatch, opts.Continue = "", "", ""
	opts.Limit = listPageSize
	out := &metainternalversion.List{}
	var rv string
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		page, err := list(ctx, opts)
		if err == nil && rv == "" {
			if m, err := meta.ListAccessor(page); err == nil {
				rv = m.GetResourceVersion()
			}
		}
		return page, err
	})
	p.PageBufferSize = 1 // the next page is read while this one is slimmed, no more
	err := p.EachListItem(ctx, opts, func(obj runtime.Object) error {
		slim, _ := s.Transform(obj) // never fails
		if o, ok := slim.(runtime.Object); ok {
			out.Items = append(out.Items, o)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.ResourceVersion = rv
	return out, nil
}

// slimWatch is a watch whose events carry slimmed objects. Its goroutine ends when the watch it
// reads ends or at Stop, whether or not its events are read (watch.Filter's would block on an
// event nobody reads after Stop).
type slimWatch struct {
	in   watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func newSlimWatch(in watch.Interface, slim cache.TransformFunc) *slimWatch {
	w := &slimWatch{in: in, out: make(chan watch.Event), stop: make(chan struct{})}
	go w.run(slim)
	return w
}

func (w *slimWatch) run(slim cache.TransformFunc) {
	defer close(w.out)
	for {
		var e watch.Event
		select {
		case ev, ok := <-w.in.ResultChan():
			if !ok {
				return
			}
			e = ev
		case <-w.stop:
			return
		}
		if o, err := slim(e.Object); err == nil {
			if obj, ok := o.(runtime.Object); ok {
				e.Object = obj // an error Status or a bookmark passes unchanged or keeps its version
			}
		}
		select {
		case w.out <- e:
		case <-w.stop:
			return
		}
	}
}

func (w *slimWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *slimWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.in.Stop()
	})
}
