// The DNSEndpoint source (external-dns's --source=crd): a dynamic informer on
// externaldns.k8s.io/v1alpha1 dnsendpoints, found by the discovery loop like the Gateway API
// kinds, and the status.observedGeneration write-back.

package kubesource

import (
	"context"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsrecord "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// dnsEndpointKind is the DNSEndpoint kind as discovery looks for it.
var dnsEndpointKind = gatewayKind{
	kind: source.KindDNSEndpoint, group: source.DNSEndpointGVR.Group, resource: source.DNSEndpointGVR.Resource,
	versions: []string{source.DNSEndpointGVR.Version},
	dynamic: func(ctx context.Context, w *Watcher, version, namespace string) listSource {
		w.startStatusWriter(ctx)
		gvr := source.DNSEndpointGVR
		gvr.Version = version
		r := w.dyn.Resource(gvr).Namespace(namespace)
		lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				return r.List(ctx, opts)
			},
			WatchFuncWithContext: r.Watch,
		}, w.dyn)
		return listSource{lw: lw, object: &unstructured.Unstructured{}, indexers: cache.Indexers{}}
	},
}

// discoveredKinds are the kinds the discovery loop looks for: the Gateway API kinds, and the
// DNSEndpoint when the options ask for it and the Watcher has a dynamic client.
func (w *Watcher) discoveredKinds() []gatewayKind {
	if w.dyn == nil || !w.opts.watches(source.KindDNSEndpoint) {
		return gatewayKinds
	}
	return append(gatewayKinds[:len(gatewayKinds):len(gatewayKinds)], dnsEndpointKind)
}

// groupName is the API group of the kind.
func (gk gatewayKind) groupName() string {
	if gk.group == "" {
		return gatewayv1.GroupName
	}
	return gk.group
}

// builder builds the kind's informers at version, one per namespace.
func (gk gatewayKind) builder(ctx context.Context, w *Watcher, version string) newInformer {
	if gk.dynamic != nil {
		return func(ns string) listSource { return gk.dynamic(ctx, w, version, ns) }
	}
	return func(ns string) listSource {
		return gk.informer(w.gw, w.slim, gk.resource, version, ns)
	}
}

// dnsEndpoint is the transform of a DNSEndpoint read by the dynamic informer: the typed slim
// form, with what the mapping, the Events and the status write need. An object that does not
// decode (the CRD's schema makes that unlikely) keeps its metadata and no endpoints.
func (s *slimmer) dnsEndpoint(u *unstructured.Unstructured) *source.DNSEndpoint {
	d, err := source.DNSEndpointFromUnstructured(u.Object)
	if err != nil {
		log.Warningf("DNSEndpoint %s/%s does not decode, publishing nothing for it: %v", u.GetNamespace(), u.GetName(), err)
		d = &source.DNSEndpoint{}
		d.Namespace, d.Name, d.UID, d.ResourceVersion = u.GetNamespace(), u.GetName(), u.GetUID(), u.GetResourceVersion()
		d.CreationTimestamp, d.Generation, d.Labels, d.Annotations = u.GetCreationTimestamp(), u.GetGeneration(), u.GetLabels(), u.GetAnnotations()
	}
	out := &source.DNSEndpoint{ObjectMeta: s.routeMeta(&d.ObjectMeta), Status: d.Status}
	out.Generation = d.Generation
	for _, e := range d.Spec.Endpoints {
		e.SetIdentifier = "" // ignored, as providerSpecific and labels, which are not decoded
		out.Spec.Endpoints = append(out.Spec.Endpoints, e)
	}
	return out
}

// processDNSEndpoint maps one DNSEndpoint and, once its names are handed on, writes back the
// generation it read.
func (w *Watcher) processDNSEndpoint(ref dnsrecord.ObjectRef) {
	d, ok := stored[*source.DNSEndpoint](w, ref)
	if !ok {
		return
	}
	claims, rejected := w.cfg.DNSEndpointClaims(d)
	w.apply(ref, claims)
	w.report(ref, string(d.UID), rejected)
	if d.Status.ObservedGeneration != d.Generation && w.cfg.SelectsDNSEndpoint(d) {
		w.statusPending = append(w.statusPending, ref)
	}
}

// handOffStatus queues the status writes of the DNSEndpoints whose names were just handed to
// OnChange. It runs at the end of every flush.
func (w *Watcher) handOffStatus() {
	if sw := w.status.Load(); sw != nil {
		for _, ref := range w.statusPending {
			sw.queue.Add(ref)
		}
	}
	w.statusPending = nil
}

// statusWriter is the queue of the status writes and its goroutine.
type statusWriter struct {
	queue workqueue.TypedRateLimitingInterface[dnsrecord.ObjectRef]
}

// statusRequestTimeout bounds one status write: a black-holed API server delays the next one,
// never the worker, which only queues them.
const statusRequestTimeout = 10 * time.Second

// statusRetries is how often a failed status write is tried again (with back-off) before it
// waits for the object's next change.
const statusRetries = 5

// startStatusWriter starts, once, the goroutine that writes status.observedGeneration. It is
// called from the discovery loop, which the WaitGroup counts.
func (w *Watcher) startStatusWriter(ctx context.Context) {
	if w.status.Load() != nil {
		return
	}
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[dnsrecord.ObjectRef](200*time.Millisecond, 10*time.Second),
		workqueue.TypedRateLimitingQueueConfig[dnsrecord.ObjectRef]{})
	w.status.Store(&statusWriter{queue: q})
	w.wg.Add(2)
	go func() {
		defer w.wg.Done()
		<-ctx.Done()
		q.ShutDown()
	}()
	go func() {
		defer w.wg.Done()
		for ctx.Err() == nil {
			ref, shutdown := q.Get()
			if shutdown {
				return
			}
			err := w.writeObservedGeneration(ctx, ref)
			switch {
			case err == nil || ctx.Err() != nil:
				q.Forget(ref)
			case q.NumRequeues(ref) < statusRetries:
				q.AddRateLimited(ref)
			default:
				log.Warningf("Could not write status.observedGeneration of DNSEndpoint %s/%s: %v", ref.Namespace, ref.Name, err)
				q.Forget(ref)
			}
			q.Done(ref)
		}
	}()
}

// writeObservedGeneration sets status.observedGeneration of the DNSEndpoint to the generation
// the cache holds, if it is not that already, with a merge patch of the status subresource:
// it sets that one field, so it cannot conflict with another writer of the object.
func (w *Watcher) writeObservedGeneration(ctx context.Context, ref dnsrecord.ObjectRef) error {
	obj, ki, ok := w.get(ref)
	d, isDE := obj.(*source.DNSEndpoint)
	if !ok || !isDE || d.Status.ObservedGeneration == d.Generation {
		return nil
	}
	gvr := source.DNSEndpointGVR
	gvr.Version = ki.version
	patch := []byte(`{"status":{"observedGeneration":` + strconv.FormatInt(d.Generation, 10) + `}}`)
	rctx, cancel := context.WithTimeout(ctx, statusRequestTimeout)
	defer cancel()
	_, err := w.dyn.Resource(gvr).Namespace(d.Namespace).Patch(rctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patching status: %w", err)
	}
	return nil
}
