// The DNSEndpoint source (external-dns's --source=crd): a dynamic informer on
// externaldns.k8s.io/v1alpha1 dnsendpoints, found by the discovery loop like the Gateway API
// kinds, and the queue of the status write-back (dnsendpoint_status.go).

package kubesource

import (
	"context"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsrecord "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/statelog"
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
		e.ProviderSpecific = slices.DeleteFunc(e.ProviderSpecific, func(p source.ProviderSpecificProperty) bool {
			return !source.SteeringProperty(p.Name)
		})
		maps.DeleteFunc(e.Labels, func(k, _ string) bool { return !source.SteeringProperty(k) })
		if len(e.ProviderSpecific) == 0 {
			e.ProviderSpecific = nil
		}
		if len(e.Labels) == 0 {
			e.Labels = nil
		}
		out.Spec.Endpoints = append(out.Spec.Endpoints, e) // setIdentifier kept: it makes aws/weight a weight
	}
	return out
}

// processDNSEndpoint maps one DNSEndpoint and, once its names are handed on, has its status
// looked at (dnsendpoint_status.go): the generation read, and whether its entries were taken.
func (w *Watcher) processDNSEndpoint(ref dnsrecord.ObjectRef) {
	sw := w.status.Load()
	d, ok := stored[*source.DNSEndpoint](w, ref)
	if !ok {
		sw.forget(ref)
		return
	}
	claims, rejected := w.cfg.DNSEndpointClaims(d)
	changed := w.desired.Set(ref, claims)
	w.changed(changed)
	w.report(ref, string(d.UID), rejected)
	if w.cfg.SelectsDNSEndpoint(d) {
		sw.mapped(ref, d.Generation, len(changed) == 0)
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

// statusWriter is the queue of the status writes and its goroutine, and what decides a
// DNSEndpoint's Ready condition besides the published names (dnsendpoint_status.go).
type statusWriter struct {
	queue workqueue.TypedRateLimitingInterface[dnsrecord.ObjectRef]
	generations
	// pruned: the API server dropped the conditions of the last status written (a CRD without
	// them in its schema), last seen at prunedAt; only the goroutine reads and writes them.
	pruned    bool
	prunedAt  time.Time
	prunedLog statelog.State[bool]
}

// statusRequestTimeout bounds one status write: a black-holed API server delays the next one,
// never the worker, which only queues them.
const statusRequestTimeout = 10 * time.Second

// statusRetries is how often a failed status write is tried again (with back-off) before it
// waits for the object's next change.
const statusRetries = 5

// startStatusWriter starts, once, the goroutine that writes the status. It is called from the
// discovery loop, which the WaitGroup counts.
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
			err := w.writeStatus(ctx, w.status.Load(), ref)
			switch {
			case err == nil || ctx.Err() != nil:
				q.Forget(ref)
			case q.NumRequeues(ref) < statusRetries:
				q.AddRateLimited(ref)
			default:
				log.Warningf("Could not write the status of DNSEndpoint %s/%s: %v", ref.Namespace, ref.Name, err)
				q.Forget(ref)
			}
			q.Done(ref)
		}
	}()
}
