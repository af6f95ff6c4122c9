// ListenerSets: more listeners for a Gateway, defined outside it. Routes attach through them
// (source.RouteClaimsWithListenerSets), so a ListenerSet change recomputes the routes that name
// it, and a Gateway change also the routes attached through the Gateway's ListenerSets.

package kubesource

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	dnsrecord "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// listenerSetIndex is the name of the route informers' index of source.ParentListenerSetKeys.
// The ListenerSet informer indexes its objects under gatewayIndex by their parent Gateway
// (source.ListenerSetGatewayKeys).
const listenerSetIndex = "listenerset"

// listenerSetKind is the ListenerSet entry of gatewayKinds: v1 only (the v1alpha1 XListenerSet
// of the experimental channel is another kind, not read).
var listenerSetKind = gatewayKind{kind: source.KindListenerSet, resource: "listenersets", versions: []string{"v1"},
	informer: func(c gwclient.Interface, s *slimmer, resource, _, ns string) listSource {
		r := c.GatewayV1().ListenerSets(ns)
		return gatewayInformer[gatewayv1.ListenerSet](s, c, c.GatewayV1().RESTClient(), resource, ns, r.List, r.Watch, cache.Indexers{
			cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
			gatewayIndex:         source.ListenerSetGatewayKeys,
		})
	}}

// listenerSetNamespaces is namespacesOf for ListenerSets. A ListenerSet may live in another
// namespace than the routes that attach to it and than its Gateway (the Gateway's
// allowedListeners decides which), so it is read like a Gateway: in every namespace, except
// when both the namespaces and the gateway-namespace options are set (a deployment with
// namespaced Roles only): then in those namespaces. A route attached to a ListenerSet outside
// them is reported ParentNotFound.
func (w *Watcher) listenerSetNamespaces() []string {
	if len(w.cfg.Namespaces) == 0 || w.cfg.GatewayNamespace == "" {
		return nil
	}
	out := []string{w.cfg.GatewayNamespace}
	for _, ns := range w.cfg.Namespaces {
		if ns != w.cfg.GatewayNamespace {
			out = append(out, ns)
		}
	}
	return out
}

// listenerSet is the source.ListenerSetLookup of the ListenerSet informer (none until its CRD
// is served).
func (w *Watcher) listenerSet(namespace, name string) (*gatewayv1.ListenerSet, bool) {
	obj, _, ok := w.get(dnsrecord.ObjectRef{Kind: source.KindListenerSet, Namespace: namespace, Name: name})
	if !ok {
		return nil, false
	}
	ls, ok := obj.(*gatewayv1.ListenerSet)
	return ls, ok
}

// enqueueListenerSetRoutes queues the routes that name the ListenerSet namespace/name.
func (w *Watcher) enqueueListenerSetRoutes(namespace, name string) {
	key := source.ListenerSetKey(namespace, name)
	for _, ki := range w.routeKinds() {
		w.enqueueRoutes(ki.byIndex(listenerSetIndex, key))
	}
}

// enqueueRoutesThroughListenerSets queues the routes attached through the ListenerSets that
// ListenerSets(index, value) finds: those of a Gateway (gatewayIndex) or of a namespace
// (cache.NamespaceIndex, whose labels the Gateway's allowedListeners selector reads).
func (w *Watcher) enqueueRoutesThroughListenerSets(index, value string) {
	ki := w.kind(source.KindListenerSet)
	if ki == nil {
		return
	}
	for _, obj := range ki.byIndex(index, value) {
		if ls, ok := obj.(*gatewayv1.ListenerSet); ok {
			w.enqueueListenerSetRoutes(ls.Namespace, ls.Name)
		}
	}
}

// listenerSet keeps the parentRef, the listener entries without TLS, the Accepted and
// Programmed conditions (type and status) and the external-dns annotations (its target
// annotation overrides the parent Gateway's targets): nothing else of a ListenerSet is read.
func (s *slimmer) listenerSet(o *gatewayv1.ListenerSet) *gatewayv1.ListenerSet {
	out := &gatewayv1.ListenerSet{ObjectMeta: s.meta(&o.ObjectMeta, nil)}
	out.Spec.ParentRef = o.Spec.ParentRef
	if len(o.Spec.Listeners) > 0 {
		out.Spec.Listeners = make([]gatewayv1.ListenerEntry, len(o.Spec.Listeners))
		for i, l := range o.Spec.Listeners {
			out.Spec.Listeners[i] = gatewayv1.ListenerEntry{
				Name: l.Name, Hostname: l.Hostname, Port: l.Port, Protocol: l.Protocol, AllowedRoutes: l.AllowedRoutes,
			}
		}
	}
	for _, c := range o.Status.Conditions {
		if c.Type == string(gatewayv1.ListenerSetConditionAccepted) || c.Type == string(gatewayv1.ListenerSetConditionProgrammed) {
			out.Status.Conditions = append(out.Status.Conditions, metav1.Condition{Type: c.Type, Status: c.Status})
		}
	}
	return out
}
