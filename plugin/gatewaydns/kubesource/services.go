// Services: their informers, and the EndpointSlices and Nodes their names are made of.

package kubesource

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	dnsrecord "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// startServiceInformers starts the Service and EndpointSlice informers, and the Node informer
// unless the service-types filter leaves NodePort Services out (Nodes are cluster-scoped: a
// cluster that publishes no NodePort Service then needs no ClusterRole for them).
func (w *Watcher) startServiceInformers(ctx context.Context) {
	w.startInformer(ctx, source.KindService, "v1", false, newServiceInformer(w.kube), w.namespacesOf(source.KindService))
	w.startInformer(ctx, KindEndpointSlice, "v1", false, newEndpointSliceInformer(w.kube), w.namespacesOf(KindEndpointSlice))
	if w.readsNodes() {
		w.startInformer(ctx, KindNode, "v1", false, newNodeInformer(w.kube), w.namespacesOf(KindNode))
	}
}

func (w *Watcher) readsNodes() bool {
	return len(w.cfg.ServiceTypes) == 0 || slices.Contains(w.cfg.ServiceTypes, corev1.ServiceTypeNodePort)
}

// processService recomputes one Service.
func (w *Watcher) processService(ref dnsrecord.ObjectRef) {
	svc, ok := stored[*corev1.Service](w, ref)
	if !ok {
		return
	}
	claims, rejected := w.cfg.ServiceClaims(svc, source.ServiceContext{EndpointSlices: w.endpointSlices, Nodes: w.nodes})
	w.apply(ref, claims)
	w.report(ref, string(svc.UID), rejected)
}

// enqueueNodePortServices puts every NodePort Service on the queue: their names are the nodes'
// addresses.
func (w *Watcher) enqueueNodePortServices() {
	ki := w.kind(source.KindService)
	if ki == nil {
		return
	}
	for _, obj := range ki.list() {
		if svc, ok := obj.(*corev1.Service); ok && svc.Spec.Type == corev1.ServiceTypeNodePort {
			w.queue.Add(source.ServiceRef(svc))
		}
	}
}

// endpointSlices is the source.ServiceContext lookup of the EndpointSlice informer.
func (w *Watcher) endpointSlices(namespace, name string) []*discoveryv1.EndpointSlice {
	ki := w.kind(KindEndpointSlice)
	if ki == nil {
		return nil
	}
	objs := ki.byIndex(serviceIndex, namespace+"/"+name)
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		if es, ok := o.(*discoveryv1.EndpointSlice); ok {
			out = append(out, es)
		}
	}
	return out
}

// nodes is the source.ServiceContext lookup of the Node informer.
func (w *Watcher) nodes() []*corev1.Node {
	ki := w.kind(KindNode)
	if ki == nil {
		return nil
	}
	objs := ki.list()
	out := make([]*corev1.Node, 0, len(objs))
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			out = append(out, n)
		}
	}
	return out
}
