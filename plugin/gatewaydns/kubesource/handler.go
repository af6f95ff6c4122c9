// Informer event handling: what an informer event puts on the work queue.

package kubesource

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	dnsrecord "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// handler enqueues the object of an informer event; updates that change nothing the mapping
// reads (a resync, a relist, status conditions) are dropped.
func (w *Watcher) handler(kind string) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			ns, name, err := cache.SplitMetaNamespaceKey(d.Key)
			if err == nil {
				w.queue.Add(refOf(kind, ns, name))
			}
			return
		}
		if m, err := meta.Accessor(obj); err == nil {
			w.queue.Add(refOf(kind, m.GetNamespace(), m.GetName()))
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, cur any) {
			if !sameContent(old, cur) {
				enqueue(cur)
			}
		},
		DeleteFunc: enqueue,
	}
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
