// One informer: client-go's Reflector listing and watching into a DeltaFIFO, whose deltas are
// applied to an Indexer and handed to the Watcher's handler, as a SharedIndexInformer does, but
// with the Reflector's retries in the Watcher's hands.
//
// Why not a SharedIndexInformer: its Reflector waits between attempts with a back-off that
// starts at 0.8 s, doubles to 30 s and is reset only every 2 minutes, and a SharedIndexInformer
// lets nobody change or cut short that wait (ReflectorOptions.Backoff is not passed through).
// Every kube-apiserver restart costs a few steps of it (the watches end, the re-watches are
// refused while it is down, the watch cache it comes back with is newer than the
// resourceVersion held: a re-list), so the third restart of a series was followed 10 to 50 s
// late. Here the Reflector's own waits are a short constant, and the real back-off is the
// gate's (gate.go), which the API server becoming ready again cuts short. Everything else is
// client-go's: the list at the resourceVersion held ("not older than" it, so a re-list never
// goes back in time), the Replace that makes a re-list's absent objects deletions, the watch
// from the list's version.

package kubesource

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

// reflectorDelay is the Reflector's own wait between its attempts: only a floor, since every
// request passes the gate, which waits out the back-off after a failure.
const reflectorDelay = 50 * time.Millisecond

// minListAndWatch is how long a list and watch must last not to count as a failure: a watch
// that ends at once, again and again, must not turn into a re-list loop.
const minListAndWatch = time.Second

// listSource is how one informer reads: its list and watch (not gated yet), the type of its
// objects, its indexers, and whether its list and watch hand on slimmed objects already (the
// Gateway API kinds: no transform then).
type listSource struct {
	lw       cache.ListerWatcher
	object   runtime.Object
	indexers cache.Indexers
	slimmed  bool
}

// informer is the cache of one kind in one namespace ("" all) and the loop that fills it.
type informer struct {
	name      string // kind or kind/namespace, for the logs
	indexer   cache.Indexer
	fifo      *cache.DeltaFIFO
	reflector *cache.Reflector
	gate      *gate
	handler   cache.ResourceEventHandler
}

// newInformerOf builds the informer of src read through g (its gate, made on src.lw);
// transform (nil: none) slims what src does not.
func newInformerOf(name string, src listSource, g *gate, transform cache.TransformFunc, resync time.Duration, handler cache.ResourceEventHandler) *informer {
	indexer := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, src.indexers)
	if src.slimmed {
		transform = nil
	}
	fifo := cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{
		KnownObjects: indexer, EmitDeltaTypeReplaced: true, Transformer: transform,
	})
	r := cache.NewReflectorWithOptions(g, src.object, fifo, cache.ReflectorOptions{
		Name: name, ResyncPeriod: resync,
		Backoff: &wait.Backoff{Duration: reflectorDelay}, // a constant: the gate backs off
	})
	return &informer{name: name, indexer: indexer, fifo: fifo, reflector: r, gate: g, handler: handler}
}

// hasSynced reports whether the handler has been handed every object of the first list.
func (i *informer) hasSynced() bool { return i.fifo.HasSynced() }

// run fills the cache until ctx ends: the Reflector's list and watch, again at once when it
// ends, past the gate when it failed; and the deltas applied in order.
func (i *informer) run(ctx context.Context) {
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		i.reflect(ctx)
	}()
	stop := context.AfterFunc(ctx, i.fifo.Close)
	defer stop()
	// Closed, the FIFO still hands out what it holds: stop at ctx instead, as Stop must be prompt.
	for ctx.Err() == nil {
		if _, err := i.fifo.Pop(i.process); errors.Is(err, cache.ErrFIFOClosed) {
			break
		}
	}
	<-stopped
}

// reflect runs the Reflector's list and watch until ctx ends, again at once when it ends. One
// that failed (other than for a resourceVersion to list again from), or that ended within
// minListAndWatch, makes the gate wait before the next one's first request.
func (i *informer) reflect(ctx context.Context) {
	for ctx.Err() == nil {
		began, recovered := time.Now(), i.gate.health.recovered()
		err := i.reflector.ListAndWatchWithContext(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			i.gate.onError(err)
		}
		if (err != nil && !relistError(err)) || time.Since(began) < minListAndWatch {
			i.gate.fail(recovered)
		}
	}
}

// process applies one key's deltas to the indexer and hands them to the handler, as
// client-go's informers do.
func (i *informer) process(obj any, isInInitialList bool) error {
	deltas, ok := obj.(cache.Deltas)
	if !ok {
		return nil
	}
	for _, d := range deltas {
		switch d.Type {
		case cache.Sync, cache.Replaced, cache.Added, cache.Updated:
			if old, exists, err := i.indexer.Get(d.Object); err == nil && exists {
				if err := i.indexer.Update(d.Object); err != nil {
					return err
				}
				i.handler.OnUpdate(old, d.Object)
				continue
			}
			if err := i.indexer.Add(d.Object); err != nil {
				return err
			}
			i.handler.OnAdd(d.Object, isInInitialList)
		case cache.Deleted:
			if err := i.indexer.Delete(d.Object); err != nil {
				return err
			}
			i.handler.OnDelete(d.Object)
		}
	}
	return nil
}
