// Package kubesource feeds the pure mapping of package source from the Kubernetes API: shared
// informers (with transform functions that keep only the fields the mapping reads) for the
// Gateway API kinds the API server serves, Ingresses and Namespaces; a work queue that
// recomputes only the objects an event touches; a source.Desired holding the result; and
// Warning Events for every name that is not published as asked.
//
// The publish path's writer is the consumer: it is told which names changed (Options.OnChange),
// reads their endpoints from Desired, and must not delete anything before Synced.
package kubesource

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	dnsrecord "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

var log = clog.NewWithPlugin("gatewaydns")

// DefaultDiscoveryInterval is how often the API server is asked again for the Gateway API
// kinds that it did not serve, so that a CRD installed later is watched without a restart.
const DefaultDiscoveryInterval = 30 * time.Second

// DefaultComponent is the source component of the Events.
const DefaultComponent = "gatewaydns"

// maxBatch bounds the names handed to OnChange in one call while a burst is worked off.
const maxBatch = 1024

// Observer receives what the plugin counts. Its methods are called from the Watcher's
// goroutines and must not block.
type Observer interface {
	// KindServed reports whether the API server serves a Gateway API kind (and at which
	// version, when it does). It is called once per kind at the first discovery, and again
	// when the answer changes (a CRD installed later).
	KindServed(kind, version string, served bool)
	// Rejected counts one Rejection reported as a Warning Event on an object of kind. The
	// same rejection is counted once while it lasts, not on every recomputation.
	Rejected(kind string, cause source.Cause)
}

type nopObserver struct{}

func (nopObserver) KindServed(string, string, bool) {}
func (nopObserver) Rejected(string, source.Cause)   {}

// Options configure a Watcher.
type Options struct {
	// Config holds the filters and defaults of the mapping.
	Config source.Config
	// OnChange, when set, receives the names (sorted, unique) whose endpoint or conflicts
	// changed; read them with Desired().Endpoint(name). It is called from one goroutine,
	// in order, and must not block for long: bursts are coalesced while it runs.
	OnChange func(names []string)
	// Observer, when set, receives what the plugin counts.
	Observer Observer
	// DiscoveryInterval is how often kinds that are not served are looked for again;
	// 0 means DefaultDiscoveryInterval.
	DiscoveryInterval time.Duration
	// ResyncPeriod is the informers' resync period; 0 (the default) means none.
	ResyncPeriod time.Duration
	// Component is the source component of the Events; "" means DefaultComponent.
	Component string
	// Kinds limits the objects read to these route kinds and Ingress (source.Kind*); empty
	// means all. Gateways and Namespaces are read whenever a route kind is.
	Kinds []string
}

// watches tells whether the options ask for kind.
func (o *Options) watches(kind string) bool {
	return len(o.Kinds) == 0 || slices.Contains(o.Kinds, kind)
}

// kindInformer is one started informer.
type kindInformer struct {
	kind, version string
	route         bool
	informer      cache.SharedIndexInformer
	registration  cache.ResourceEventHandlerRegistration
}

// reportedSet is the set of rejections last reported on one object (of one incarnation).
type reportedSet struct {
	uid string
	set map[source.Rejection]struct{}
}

// Watcher watches the Kubernetes API and keeps a source.Desired up to date.
type Watcher struct {
	opts      Options
	cfg       source.Config
	observer  Observer
	interval  time.Duration
	kube      kubernetes.Interface
	gw        gwclient.Interface
	slim      *slimmer
	desired   *source.Desired
	resources func(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error)

	queue       *workqueue.Typed[dnsrecord.ObjectRef]
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder

	mu     sync.RWMutex
	kinds  map[string]*kindInformer // started informers by kind
	served map[string]string        // Gateway API kind -> version served ("" not served), as last reported

	lifecycle  sync.Mutex // guards started and cancel
	started    bool
	synced     atomic.Bool
	syncedC    chan struct{}
	discovered chan struct{} // closed after the first complete discovery
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	done       chan struct{}

	// The worker's own state.
	reported  map[dnsrecord.ObjectRef]reportedSet
	conflicts map[string]map[source.Rejection]struct{}
	pending   []string
}

// barrier is the queue item that marks the end of the initial lists.
var barrier = dnsrecord.ObjectRef{Kind: "\x00barrier"}

// RestConfig returns the client configuration of a kubeconfig file and context (the current
// context when context is ""), or the in-cluster configuration when kubeconfig is "".
func RestConfig(kubeconfig, context string) (*rest.Config, error) {
	if kubeconfig == "" {
		if context != "" {
			return nil, errors.New("a kubeconfig context needs a kubeconfig file")
		}
		return rest.InClusterConfig()
	}
	return clientConfig(kubeconfig, context)
}

// New returns a Watcher that talks to the API server of rc. Start starts it.
func New(rc *rest.Config, opts Options) (*Watcher, error) {
	kcfg := rest.CopyConfig(rc)
	kcfg = rest.AddUserAgent(kcfg, DefaultComponent)
	kcfg.ContentType = runtime.ContentTypeProtobuf
	kcfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(kcfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	gcfg := rest.AddUserAgent(rest.CopyConfig(rc), DefaultComponent)
	gw, err := gwclient.NewForConfig(gcfg)
	if err != nil {
		return nil, fmt.Errorf("gateway-api client: %w", err)
	}
	return NewForClients(kube, gw, opts), nil
}

// NewForClients returns a Watcher that uses the given clients (e.g. fakes in tests); the kinds
// served are asked from kube's discovery client.
func NewForClients(kube kubernetes.Interface, gw gwclient.Interface, opts Options) *Watcher {
	w := &Watcher{
		opts: opts, cfg: opts.Config, observer: opts.Observer, interval: opts.DiscoveryInterval,
		kube: kube, gw: gw, slim: newSlimmer(&opts.Config), desired: source.NewDesired(),
		kinds: map[string]*kindInformer{}, served: map[string]string{},
		syncedC: make(chan struct{}), discovered: make(chan struct{}), done: make(chan struct{}),
		reported:  map[dnsrecord.ObjectRef]reportedSet{},
		conflicts: map[string]map[source.Rejection]struct{}{},
		// Without a name the queue publishes no metrics and starts no goroutine.
		queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[dnsrecord.ObjectRef]{}),
	}
	if w.observer == nil {
		w.observer = nopObserver{}
	}
	if w.interval <= 0 {
		w.interval = DefaultDiscoveryInterval
	}
	if w.opts.Component == "" {
		w.opts.Component = DefaultComponent
	}
	disco := discovery.ToDiscoveryInterfaceWithContext(kube.Discovery())
	w.resources = disco.ServerResourcesForGroupVersionWithContext
	return w
}

// Desired returns the desired endpoints. It is updated by the Watcher; read it after OnChange
// and, for a full comparison (deletes included), only once Synced is true.
func (w *Watcher) Desired() *source.Desired { return w.desired }

// Synced reports whether Desired reflects the initial state of the cluster: the first
// discovery completed, every informer it started (and the Ingress and Namespace informers)
// has synced, and every object they listed has been mapped. Kinds that are not served do not
// hold it back; a kind that appears later does not make it false again.
func (w *Watcher) Synced() bool { return w.synced.Load() }

// SyncedC is closed when Synced becomes true.
func (w *Watcher) SyncedC() <-chan struct{} { return w.syncedC }

// Kinds returns the kinds watched so far and the version watched for each.
func (w *Watcher) Kinds() map[string]string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	out := make(map[string]string, len(w.kinds))
	for k, ki := range w.kinds {
		out[k] = ki.version
	}
	return out
}

// Start starts the informers, the discovery loop, the worker and the Event broadcaster, and
// returns. They run until ctx is cancelled or Stop is called. A Watcher starts once.
func (w *Watcher) Start(ctx context.Context) error {
	w.lifecycle.Lock()
	defer w.lifecycle.Unlock()
	if w.started {
		return errors.New("kubesource: watcher already started")
	}
	w.started = true
	ctx, w.cancel = context.WithCancel(ctx)
	w.broadcaster = record.NewBroadcaster(record.WithContext(ctx))
	w.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: w.kube.CoreV1().Events("")})
	w.recorder = w.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: w.opts.Component})

	if w.opts.watches(source.KindIngress) {
		w.startInformer(ctx, source.KindIngress, "v1", false, newIngressInformer(w.kube, w.opts.ResyncPeriod))
	}
	w.startInformer(ctx, KindNamespace, "v1", false, newNamespaceInformer(w.kube, w.opts.ResyncPeriod))
	w.wg.Add(2)
	go func() {
		defer w.wg.Done()
		w.discoveryLoop(ctx)
	}()
	go func() {
		defer w.wg.Done()
		w.syncThenWork(ctx)
	}()
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
		w.wg.Wait()
		w.broadcaster.Shutdown()
		close(w.done)
	}()
	return nil
}

// Stop stops everything Start started and waits until it has stopped. It may be called more
// than once, and without Start.
func (w *Watcher) Stop() {
	w.lifecycle.Lock()
	started, cancel := w.started, w.cancel
	w.lifecycle.Unlock()
	if !started {
		return
	}
	cancel()
	<-w.done
}

// Done is closed once a started Watcher has stopped.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// startInformer registers and runs one informer. It is called from Start and from the
// discovery loop (which the WaitGroup counts, so Add never races with Wait).
func (w *Watcher) startInformer(ctx context.Context, kind, version string, route bool, inf cache.SharedIndexInformer) {
	if err := inf.SetTransform(w.slim.Transform); err != nil {
		log.Errorf("%s informer: %v", kind, err) // only fails on a started informer
	}
	reg, err := inf.AddEventHandler(w.handler(kind))
	if err != nil {
		log.Errorf("%s informer: %v", kind, err)
		return
	}
	w.mu.Lock()
	w.kinds[kind] = &kindInformer{kind: kind, version: version, route: route, informer: inf, registration: reg}
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		inf.RunWithContext(ctx)
	}()
}

func (w *Watcher) kind(kind string) *kindInformer {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.kinds[kind]
}

func (w *Watcher) routeKinds() []*kindInformer {
	w.mu.RLock()
	defer w.mu.RUnlock()
	var out []*kindInformer
	for _, ki := range w.kinds {
		if ki.route {
			out = append(out, ki)
		}
	}
	return out
}

// discoveryLoop looks for the Gateway API kinds not watched yet, at once and then every
// interval (sooner while the first discovery fails).
func (w *Watcher) discoveryLoop(ctx context.Context) {
	first := true
	retry := 500 * time.Millisecond
	for {
		wait := w.interval
		if w.discover(ctx) {
			if first {
				first = false
				close(w.discovered)
			}
		} else if first {
			wait = min(retry, w.interval)
			retry *= 2
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// discover asks the API server which Gateway API kinds it serves, starts an informer for each
// served kind not watched yet and reports the kinds that are not served. It returns false when
// some answer could not be had (an error other than NotFound).
func (w *Watcher) discover(ctx context.Context) bool {
	type answer struct {
		resources map[string]bool
		err       error
	}
	answers := map[string]answer{}
	lookup := func(version string) answer {
		if a, ok := answers[version]; ok {
			return a
		}
		a := answer{resources: map[string]bool{}}
		list, err := w.resources(ctx, gatewayv1.GroupName+"/"+version)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			a.err = err
		default:
			for _, r := range list.APIResources {
				a.resources[r.Name] = true
			}
		}
		answers[version] = a
		return a
	}
	complete := true
	for _, gk := range gatewayKinds {
		if ctx.Err() != nil {
			return false
		}
		if w.kind(gk.kind) != nil || (gk.route && !w.opts.watches(gk.kind)) {
			continue
		}
		version, known := "", true
		for _, v := range gk.versions {
			a := lookup(v)
			if a.err != nil {
				log.Warningf("Discovery of %s/%s failed, will retry: %v", gatewayv1.GroupName, v, a.err)
				known = false
				break
			}
			if a.resources[gk.resource] {
				version = v
				break
			}
		}
		if !known {
			complete = false
			continue
		}
		if version != "" {
			w.startInformer(ctx, gk.kind, version, gk.route, gk.informer(w.gw, version, w.opts.ResyncPeriod))
		}
		w.reportServed(gk, version)
	}
	return complete
}

// reportServed logs and reports a kind's discovery result when it differs from the last one.
func (w *Watcher) reportServed(gk gatewayKind, version string) {
	w.mu.Lock()
	prev, seen := w.served[gk.kind]
	w.served[gk.kind] = version
	w.mu.Unlock()
	if seen && prev == version {
		return
	}
	switch {
	case version == "":
		log.Infof("%s is not served by the API server (no CRD %s.%s): skipped; looking again every %s",
			gk.kind, gk.resource, gatewayv1.GroupName, w.interval)
	case seen:
		log.Infof("%s is now served (%s/%s): watching it", gk.kind, gatewayv1.GroupName, version)
	}
	w.observer.KindServed(gk.kind, version, version != "")
}

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
	var regs []cache.ResourceEventHandlerRegistration
	for _, ki := range w.kinds {
		regs = append(regs, ki.registration)
	}
	w.mu.RUnlock()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !allSynced(regs) {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	w.queue.Add(barrier) // after every item of the initial lists
	for w.work() {
	}
}

func allSynced(regs []cache.ResourceEventHandlerRegistration) bool {
	for _, r := range regs {
		if !r.HasSynced() {
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

// get returns the stored object of ref, if its kind is watched and the object exists.
func (w *Watcher) get(ref dnsrecord.ObjectRef) (any, *kindInformer, bool) {
	ki := w.kind(ref.Kind)
	if ki == nil {
		return nil, nil, false
	}
	key := ref.Name
	if ref.Namespace != "" {
		key = ref.Namespace + "/" + ref.Name
	}
	obj, ok, err := ki.informer.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return nil, ki, false
	}
	return obj, ki, true
}

// process recomputes what one queue item touches.
func (w *Watcher) process(ref dnsrecord.ObjectRef) {
	switch ref.Kind {
	case KindNamespace:
		// Its labels decide allowedRoutes selectors for the routes in it.
		for _, ki := range w.routeKinds() {
			objs, _ := ki.informer.GetIndexer().ByIndex(cache.NamespaceIndex, ref.Name)
			w.enqueueRoutes(objs)
		}
	case source.KindGateway:
		obj, _, ok := w.get(ref)
		var rejected []source.Rejection
		uid := ""
		if gw, isGW := obj.(*gatewayv1.Gateway); ok && isGW {
			rejected, uid = w.cfg.GatewayRejections(gw), string(gw.UID)
		}
		w.report(ref, uid, rejected)
		for _, ki := range w.routeKinds() {
			objs, _ := ki.informer.GetIndexer().ByIndex(gatewayIndex, source.GatewayKey(ref.Namespace, ref.Name))
			w.enqueueRoutes(objs)
		}
	case source.KindIngress:
		obj, _, ok := w.get(ref)
		ing, isIng := obj.(*networkingv1.Ingress)
		if !ok || !isIng {
			w.forget(ref)
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
		claims, rejected := w.cfg.RouteClaims(r, w.gateway, w.namespaceLabels)
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
		cur := w.desired.NameConflicts(name)
		prev := w.conflicts[name]
		next := make(map[source.Rejection]struct{}, len(cur))
		for _, r := range cur {
			next[r] = struct{}{}
			if _, had := prev[r]; !had {
				w.emit(r)
			}
		}
		if len(next) == 0 {
			delete(w.conflicts, name)
		} else {
			w.conflicts[name] = next
		}
	}
}

// report records the rejections of one object (uid "" once it is gone) and emits those that
// were not reported on this incarnation of it before.
func (w *Watcher) report(ref dnsrecord.ObjectRef, uid string, rejected []source.Rejection) {
	prev := w.reported[ref]
	if prev.uid != uid {
		prev = reportedSet{}
	}
	if len(rejected) == 0 {
		delete(w.reported, ref)
		return
	}
	next := reportedSet{uid: uid, set: make(map[source.Rejection]struct{}, len(rejected))}
	for _, r := range rejected {
		next.set[r] = struct{}{}
		if _, had := prev.set[r]; !had {
			w.emit(r)
		}
	}
	w.reported[ref] = next
}

// emit records a Warning Event for r on the object that asked for it (if it still exists) and
// counts it.
func (w *Watcher) emit(r source.Rejection) {
	obj, ki, ok := w.get(r.Object)
	if !ok {
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	msg := r.Reason
	if r.Hostname != "" {
		msg = r.Hostname + ": " + r.Reason
	}
	w.recorder.Event(&corev1.ObjectReference{
		Kind: r.Object.Kind, APIVersion: apiVersionOf(ki.kind, ki.version),
		Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID(),
	}, corev1.EventTypeWarning, string(r.Cause), msg)
	w.observer.Rejected(r.Object.Kind, r.Cause)
}

// Reject reports a problem found after the mapping (a name the store refused, a name lost to an
// older owner) the way the mapping's own rejections are: a Warning Event on the object, counted.
func (w *Watcher) Reject(r source.Rejection) { w.emit(r) }

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
