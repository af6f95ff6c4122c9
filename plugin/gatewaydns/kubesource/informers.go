// The informers of one kind: one per namespace read, so that a namespaced Role suffices when
// the namespaces option is set, or one for every namespace.

package kubesource

import (
	"context"
)

// kindInformer is the started informers of one kind.
type kindInformer struct {
	kind, version string
	route         bool
	shards        []shard
}

// shard is one informer of a kind: for one namespace, or for all ("").
type shard struct {
	namespace string
	informer  *informer
}

// newInformer says how to read a kind in one namespace ("": all, or the kind is
// cluster-scoped).
type newInformer func(namespace string) listSource

// getByKey returns the object of key ("namespace/name", or "name") from the shard that holds
// its namespace.
func (ki *kindInformer) getByKey(namespace, key string) (any, bool) {
	for _, s := range ki.shards {
		if s.namespace != "" && s.namespace != namespace {
			continue
		}
		if obj, ok, err := s.informer.indexer.GetByKey(key); err == nil && ok {
			return obj, true
		}
	}
	return nil, false
}

// byIndex returns the objects of every shard that an index maps value to.
func (ki *kindInformer) byIndex(index, value string) []any {
	var out []any
	for _, s := range ki.shards {
		objs, _ := s.informer.indexer.ByIndex(index, value)
		out = append(out, objs...)
	}
	return out
}

// list returns the objects of every shard.
func (ki *kindInformer) list() []any {
	var out []any
	for _, s := range ki.shards {
		out = append(out, s.informer.indexer.List()...)
	}
	return out
}

// hasSynced reports whether every shard's handler has seen its initial list.
func (ki *kindInformer) hasSynced() bool {
	for _, s := range ki.shards {
		if !s.informer.hasSynced() {
			return false
		}
	}
	return true
}

// startInformer starts the informers of a kind, one per namespace in namespaces (none: one for
// all), and registers them. It is called from Start and from the discovery loop (which the
// WaitGroup counts, so Add never races with Wait).
func (w *Watcher) startInformer(ctx context.Context, kind, version string, route bool, build newInformer, namespaces []string) {
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	ki := &kindInformer{kind: kind, version: version, route: route}
	onError := func(err error) { w.health.watchError(kind)(ctx, nil, err) }
	for _, ns := range namespaces {
		src := build(ns)
		name := kind
		if ns != "" {
			name += "/" + ns
		}
		inf := newInformerOf(name, src, newGate(w.health, src.lw, onError), w.slim.Transform, w.opts.ResyncPeriod, w.handler(kind))
		ki.shards = append(ki.shards, shard{namespace: ns, informer: inf})
	}
	w.mu.Lock()
	w.kinds[kind] = ki
	w.mu.Unlock()
	for _, s := range ki.shards {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			s.informer.run(ctx)
		}()
	}
}
