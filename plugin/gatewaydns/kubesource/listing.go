// How the informers of the Gateway API kinds read: a LIST decoded one object at a time, each
// slimmed before the next is decoded, then a watch whose objects are slimmed as they come.

package kubesource

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	kjson "sigs.k8s.io/json"
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

type listFunc func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)

type watchFunc func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)

// gatewayInformer is how to read a Gateway API kind (T) through c, its objects slimmed as they
// arrive: its list decoded from the response one object at a time
// (streamedList), its watch events as they come (slimWatch). rc is c's REST client of the
// kind's version, list and watch its typed client's.
func gatewayInformer[T any, PT interface {
	*T
	runtime.Object
}, L runtime.Object](s *slimmer, c gwclient.Interface, rc rest.Interface, resource, namespace string,
	list func(context.Context, metav1.ListOptions) (L, error), watchObjects watchFunc,
	indexers cache.Indexers) listSource {
	lister := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		l, err := list(ctx, opts)
		if err != nil {
			return nil, err
		}
		return s.slimList(l)
	}
	if r, ok := rc.(*rest.RESTClient); ok && r != nil { // not a fake clientset's
		lister = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return s.streamedList(ctx, r, resource, namespace, func() runtime.Object { return PT(new(T)) }, opts)
		}
	}
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: lister,
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := watchObjects(ctx, opts)
			if err != nil {
				return nil, err
			}
			return newSlimWatch(w, s.Transform), nil
		},
	}, c)
	return listSource{lw: lw, object: PT(new(T)), indexers: indexers, slimmed: true}
}

// streamedList lists what opts selects with the request the reflector asks for, and decodes
// the response as it arrives, one object at a time, each slimmed before the next is decoded.
// The reflector's own list reads the whole response, then decodes every object, and the
// transform runs once the last is decoded: for 100k HTTPRoutes the writer held some 260 MB
// at its start (make bench, phase W) for objects whose slim forms take 80 MB. Asking for pages
// instead costs the API server more (its watch cache answers resourceVersion 0 whole, so pages
// are read at the latest version) and costs requests (5 a second after a burst of 10, client-go's
// default): 100k routes in pages of 500 took 40 s to list; in pages of 5000 the writer
// published them in 22.7 s, against 19.0 s with one LIST decoded as it arrives. A response in pages (an API server without a watch cache)
// is read page by page, as client-go's pager does; a continuation that expired fails the list,
// and the reflector lists again.
func (s *slimmer) streamedList(ctx context.Context, rc *rest.RESTClient, resource, namespace string, newItem func() runtime.Object, opts metav1.ListOptions) (runtime.Object, error) {
	out := &metainternalversion.List{}
	for page := 0; ; page++ {
		body, err := rc.Get().NamespaceIfScoped(namespace, namespace != "").Resource(resource).
			VersionedParams(&opts, metav1.ParameterCodec).Stream(ctx)
		if err != nil {
			return nil, err
		}
		var lm metav1.ListMeta
		err = decodeList(body, &lm, newItem, func(obj runtime.Object) {
			slim, _ := s.Transform(obj) // never fails
			if o, ok := slim.(runtime.Object); ok {
				out.Items = append(out.Items, o)
			}
		})
		body.Close()
		if err != nil {
			return nil, fmt.Errorf("decoding the list of %s: %w", resource, err)
		}
		if page == 0 {
			out.ResourceVersion = lm.ResourceVersion // the pages' snapshot
		}
		if lm.Continue == "" {
			return out, nil
		}
		opts.Continue, opts.ResourceVersion, opts.ResourceVersionMatch = lm.Continue, "", ""
	}
}

// decodeList reads a JSON list from r: its metadata into lm, and each of its items into a new
// object of newItem, decoded as client-go decodes objects (sigs.k8s.io/json) and handed to item
// before the next is read.
func decodeList(r io.Reader, lm *metav1.ListMeta, newItem func() runtime.Object, item func(runtime.Object)) error {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case "metadata":
			if err := dec.Decode(lm); err != nil {
				return err
			}
		case "items":
			if err := decodeItems(dec, newItem, item); err != nil {
				return err
			}
		default: // apiVersion, kind
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
		}
	}
	return expectDelim(dec, '}')
}

func decodeItems(dec *json.Decoder, newItem func() runtime.Object, item func(runtime.Object)) error {
	tok, err := dec.Token()
	if err != nil || tok == nil { // null: no items
		return err
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("items: %v where an array was expected", tok)
	}
	var raw json.RawMessage
	for dec.More() {
		raw = raw[:0]
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		obj := newItem()
		if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, obj); err != nil {
			return err
		}
		item(obj)
	}
	return expectDelim(dec, ']')
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("%v where %v was expected", tok, d)
	}
	return nil
}

// slimList is the list l with its items slimmed (the list of a fake clientset, in the tests).
func (s *slimmer) slimList(l runtime.Object) (runtime.Object, error) {
	items, err := meta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	m, err := meta.ListAccessor(l)
	if err != nil {
		return nil, err
	}
	out := &metainternalversion.List{Items: make([]runtime.Object, 0, len(items))}
	out.ResourceVersion = m.GetResourceVersion()
	for _, obj := range items {
		slim, _ := s.Transform(obj) // never fails
		if o, ok := slim.(runtime.Object); ok {
			out.Items = append(out.Items, o)
		}
	}
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
