// Informer event handling: what an informer event puts on the work queue.

package kubesource

import (
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	dnsrecord "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// handler enqueues the object of an informer event; updates that change nothing the mapping
// reads (a resync, a relist, status conditions) are dropped.
func (w *Watcher) handler(kind string) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if ref, ok := queueRef(kind, obj); ok {
			w.queue.Add(ref)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, cur any) {
			if sameContent(old, cur) {
				return
			}
			if kind == KindEndpointSlice {
				enqueue(old) // it may have moved to another Service, which must drop it
			}
			enqueue(cur)
		},
		DeleteFunc: enqueue,
	}
}

// queueRef is the work queue item an informer event of kind stands for: the object itself,
// except for the kinds that only Services read. An EndpointSlice stands for its Service; a Node
// for every NodePort Service (one item, however many nodes change at once).
func queueRef(kind string, obj any) (dnsrecord.ObjectRef, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if d.Obj != nil && kind == KindEndpointSlice {
			return queueRef(kind, d.Obj)
		}
		ns, name, err := cache.SplitMetaNamespaceKey(d.Key)
		if err != nil || kind == KindEndpointSlice {
			return dnsrecord.ObjectRef{}, false
		}
		return refOf(kind, ns, name), true
	}
	switch kind {
	case KindNode:
		return dnsrecord.ObjectRef{Kind: KindNode}, true
	case KindEndpointSlice:
		es, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok || es.Labels[discoveryv1.LabelServiceName] == "" {
			return dnsrecord.ObjectRef{}, false
		}
		return dnsrecord.ObjectRef{Kind: source.KindService, Namespace: es.Namespace, Name: es.Labels[discoveryv1.LabelServiceName]}, true
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return dnsrecord.ObjectRef{}, false
	}
	return refOf(kind, m.GetNamespace(), m.GetName()), true
}

func refOf(kind, namespace, name string) dnsrecord.ObjectRef {
	if kind == KindNamespace {
		return dnsrecord.ObjectRef{Kind: kind, Name: name}
	}
	return dnsrecord.ObjectRef{Kind: kind, Namespace: namespace, Name: name}
}

// sameContent reports whether two versions of a (transformed) object differ in nothing but
// their resourceVersion.
func sameContent(old, cur any) (same bool) {
	defer func() {
		if recover() != nil { // a type Semantic.DeepEqual cannot compare: treat as changed
			same = false
		}
	}()
	o, ok1 := old.(runtime.Object)
	c, ok2 := cur.(runtime.Object)
	if !ok1 || !ok2 {
		return false
	}
	om, err1 := meta.Accessor(o)
	cm, err2 := meta.Accessor(c)
	if err1 != nil || err2 != nil {
		return false
	}
	if om.GetResourceVersion() == cm.GetResourceVersion() {
		return true
	}
	o, c = o.DeepCopyObject(), c.DeepCopyObject()
	for _, x := range []runtime.Object{o, c} {
		m, _ := meta.Accessor(x)
		m.SetResourceVersion("")
	}
	return equality.Semantic.DeepEqual(o, c)
}
