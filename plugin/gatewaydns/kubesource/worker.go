// The worker: the one goroutine that takes object references off the work queue, recomputes
// what they touch into Desired and hands the changed names to OnChange.

package kubesource

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsrecord "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// barrier is the queue item that marks the end of the initial lists.
var barrier = dnsrecord.ObjectRef{Kind: "\x00barrier"}

// syncThenWork waits for the first discovery and for the informers started so far to sync,
// then works the queue. Starting the worker only then means that the initial mapping sees
// every Gateway and Namespace: no route is published late or reported missing its Gateway
// because of the order in which the informers listed.
func (w *Watcher) syncThenWork(ctx context.Context) {
	select {
	case <-w.discovered:
	case <-ctx.Done():
		return
	}
	w.mu.RLock()
	var started []*kindInformer
	for _, ki := range w.kinds {
		started = append(started, ki)
	}
	w.mu.RUnlock()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !allSynced(started) {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	w.queue.Add(barrier) // after every item of the initial lists
	// A shut-down queue still hands out what it holds; stopping at ctx rather than draining a
	// burst keeps Stop prompt when the queue is busy (what is left is of no use after Stop).
	for ctx.Err() == nil && w.work() {
	}
}

func allSynced(kinds []*kindInformer) bool {
	for _, ki := range kinds {
		if !ki.hasSynced() {
			return false
		}
	}
	return true
}

// work processes one queue item; it returns false once the queue is shut down.
func (w *Watcher) work() bool {
	ref, shutdown := w.queue.Get()
	if shutdown {
		return false
	}
	defer w.queue.Done(ref)
	if ref == leadershipChanged {
		w.retell()
		return true
	}
	if ref == barrier {
		w.flush()
		if w.synced.CompareAndSwap(false, true) {
			close(w.syncedC)
		}
		return true
	}
	w.process(ref)
	if w.queue.Len() == 0 || len(w.pending) >= maxBatch {
		w.flush()
	}
	return true
}

// flush hands the names changed since the last flush to OnChange.
func (w *Watcher) flush() {
	defer w.handOffStatus()
	if len(w.pending) == 0 {
		return
	}
	names := w.pending
	w.pending = nil
	slices.Sort(names)
	names = slices.Compact(names)
	if w.opts.OnChange != nil {
		w.opts.OnChange(names)
	}
}

// get returns the stored object of ref, if its kind is watched and the object exists.
func (w *Watcher) get(ref dnsrecord.ObjectRef) (any, *kindInformer, bool) {
	ki := w.kind(ref.Kind)
	if ki == nil {
		return nil, nil, false
	}
	key, namespace := ref.Name, ref.Namespace
	if namespace != "" {
		key = namespace + "/" + ref.Name
	} else if ref.Kind == KindNamespace {
		namespace = ref.Name // a Namespace informer's shard is named after the one it reads
	}
	obj, ok := ki.getByKey(namespace, key)
	return obj, ki, ok
}

// stored returns the stored object of ref as a T. When there is none (deleted, or not a T),
// it forgets ref, as for a delete, and ok is false.
func stored[T any](w *Watcher, ref dnsrecord.ObjectRef) (obj T, ok bool) {
	o, _, found := w.get(ref)
	obj, ok = o.(T)
	if !found || !ok {
		w.forget(ref)
		return obj, false
	}
	return obj, true
}

// process recomputes what one queue item touches.
func (w *Watcher) process(ref dnsrecord.ObjectRef) {
	switch ref.Kind {
	case KindNamespace:
		// Its labels decide allowedRoutes selectors for the routes in it.
		for _, ki := range w.routeKinds() {
			objs := ki.byIndex(cache.NamespaceIndex, ref.Name)
			w.enqueueRoutes(objs)
		}
		// and the Gateways' allowedListeners selectors for the ListenerSets in it.
		w.enqueueRoutesThroughListenerSets(cache.NamespaceIndex, ref.Name)
	case source.KindListenerSet:
		w.enqueueListenerSetRoutes(ref.Namespace, ref.Name)
	case source.KindGateway:
		obj, _, ok := w.get(ref)
		var rejected []source.Rejection
		uid := ""
		if gw, isGW := obj.(*gatewayv1.Gateway); ok && isGW {
			rejected, uid = w.cfg.GatewayRejections(gw), string(gw.UID)
		}
		w.report(ref, uid, rejected)
		for _, ki := range w.routeKinds() {
			objs := ki.byIndex(gatewayIndex, source.GatewayKey(ref.Namespace, ref.Name))
			w.enqueueRoutes(objs)
		}
		w.enqueueRoutesThroughListenerSets(gatewayIndex, source.GatewayKey(ref.Namespace, ref.Name))
	case source.KindDNSEndpoint:
		w.processDNSEndpoint(ref)
	case source.KindService:
		w.processService(ref)
	case KindNode:
		w.enqueueNodePortServices()
	case source.KindIngress:
		ing, ok := stored[*networkingv1.Ingress](w, ref)
		if !ok {
			return
		}
		claims, rejected := w.cfg.IngressClaims(ing)
		w.apply(ref, claims)
		w.report(ref, string(ing.UID), rejected)
	default:
		obj, _, ok := w.get(ref)
		r, isRoute := source.RouteOf(obj)
		if !ok || !isRoute {
			w.forget(ref)
			return
		}
		claims, rejected := w.cfg.RouteClaimsWithListenerSets(r, w.gateway, w.listenerSet, w.namespaceLabels)
		w.apply(ref, claims)
		uid := ""
		if m, err := meta.Accessor(obj); err == nil {
			uid = string(m.GetUID())
		}
		w.report(ref, uid, rejected)
	}
}

func (w *Watcher) enqueueRoutes(objs []any) {
	for _, o := range objs {
		if r, ok := source.RouteOf(o); ok {
			w.queue.Add(r.Ref())
		}
	}
}

// apply stores an object's claims and collects the names that changed.
func (w *Watcher) apply(ref dnsrecord.ObjectRef, claims []source.Claim) {
	w.changed(w.desired.Set(ref, claims))
}

// forget drops a deleted object.
func (w *Watcher) forget(ref dnsrecord.ObjectRef) {
	w.changed(w.desired.Delete(ref))
	w.report(ref, "", nil)
}

// changed collects changed names and reports the conflicts that appeared on them.
func (w *Watcher) changed(names []string) {
	for _, name := range names {
		w.pending = append(w.pending, name)
		next := w.track(w.conflicts[name], "", w.desired.NameConflicts(name))
		if len(next.set) == 0 {
			delete(w.conflicts, name)
		} else {
			w.conflicts[name] = next
		}
	}
}

// gateway is the source.GatewayLookup of the Gateway informer.
func (w *Watcher) gateway(namespace, name string) (*gatewayv1.Gateway, bool) {
	obj, _, ok := w.get(dnsrecord.ObjectRef{Kind: source.KindGateway, Namespace: namespace, Name: name})
	if !ok {
		return nil, false
	}
	gw, ok := obj.(*gatewayv1.Gateway)
	return gw, ok
}

// namespaceLabels is the source.NamespaceLabels of the Namespace informer.
func (w *Watcher) namespaceLabels(namespace string) (map[string]string, bool) {
	obj, _, ok := w.get(dnsrecord.ObjectRef{Kind: KindNamespace, Name: namespace})
	if !ok {
		return nil, false
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return nil, false
	}
	return ns.Labels, true
}
