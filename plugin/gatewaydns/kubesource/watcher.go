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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	dnsrecord "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/statelog"
)

var log = clog.NewWithPlugin("gatewaydns")

// DefaultDiscoveryInterval is how often the API server is asked again for the Gateway API
// kinds that it did not serve, so that a CRD installed later is watched without a restart.
const DefaultDiscoveryInterval = 30 * time.Second

// discoveryTimeout bounds one discovery request, so that a black-holed API server delays the
// next attempt rather than holding discovery forever.
const discoveryTimeout = 10 * time.Second

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
	// Rejecting is how many rejections of objects of kind for cause are reported and still
	// last, after each change of it.
	Rejecting(kind string, cause source.Cause, n int)
}

type nopObserver struct{}

func (nopObserver) KindServed(string, string, bool)     {}
func (nopObserver) Rejected(string, source.Cause)       {}
func (nopObserver) Rejecting(string, source.Cause, int) {}

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
	// ReportWhenLeading: rejections are reported (Events, counts) only while SetLeading(true)
	// says this replica leads the owner. Without it they are reported from the start.
	ReportWhenLeading bool
	// PendingGrace is how long a rejection waiting on another controller (pendingCauses) lasts
	// before it is reported; DefaultPendingGrace when 0, none when negative.
	PendingGrace time.Duration
	// DiscoveryInterval is how often kinds that are not served are looked for again;
	// 0 means DefaultDiscoveryInterval.
	DiscoveryInterval time.Duration
	// ResyncPeriod is the informers' resync period; 0 (the default) means none.
	ResyncPeriod time.Duration
	// Component is the source component of the Events; "" means DefaultComponent.
	Component string
	// Conditions: a DNSEndpoint's status gets, besides observedGeneration, status.endpoints
	// and the Accepted and Ready conditions (dnsendpoint_status.go). Off in a dry run, which
	// publishes nothing: external-dns, publishing beside it, owns them.
	Conditions bool
	// Kinds limits the objects read to these route kinds, Ingress, Service and DNSEndpoint
	// (source.Kind*); empty means every route kind and Ingress: the opt-in kinds (optInKinds:
	// Services, DNSEndpoints) are read only when named. Gateways and Namespaces are read
	// whenever a route kind is; EndpointSlices and Nodes when Services are.
	Kinds []string
}

// watches tells whether the options ask for kind; an opt-in kind only when Kinds names it.
func (o *Options) watches(kind string) bool {
	if len(o.Kinds) == 0 {
		return !slices.Contains(optInKinds, kind)
	}
	return slices.Contains(o.Kinds, kind)
}

// Named tells whether the configuration asked for kind by name (a sources option that names
// it, or names a route kind for Gateway), as opposed to reading it by default. A kind read by
// default that the cluster does not serve is normal (a cluster without the experimental
// routes); a named one is a mistake worth an alert.
func (o *Options) Named(kind string) bool {
	if slices.Contains(o.Kinds, kind) {
		return true
	}
	if kind != source.KindGateway {
		return false
	}
	return slices.ContainsFunc(o.Kinds, func(k string) bool {
		return k != source.KindIngress && k != source.KindService && k != source.KindDNSEndpoint
	})
}

// Watcher watches the Kubernetes API and keeps a source.Desired up to date.
type Watcher struct {
	opts      Options
	cfg       source.Config
	observer  Observer
	interval  time.Duration
	kube      kubernetes.Interface
	gw        gwclient.Interface
	dyn       dynamic.Interface // nil: no DNSEndpoints
	slim      *slimmer
	desired   *source.Desired
	resources func(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error)
	// crdServes reads whether the CRD of that name serves a version (an error NotFound when
	// there is no such CRD): what confirms discovery's 404 (confirmAbsent). nil: not asked.
	crdServes    func(ctx context.Context, name, version string) (bool, error)
	crdForbidden sync.Once
	health       *apiHealth
	// probe asks the API server whether it is ready while it does not answer (recovery.go);
	// nil: not asked (the clients of NewForClients).
	probe rest.Interface

	queue       workqueue.TypedDelayingInterface[dnsrecord.ObjectRef]
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder

	mu     sync.RWMutex
	kinds  map[string]*kindInformer            // started informers by kind
	served statelog.States[string, kindServed] // by Gateway API kind, as last reported

	lifecycle  sync.Mutex // guards started and cancel
	started    bool
	synced     atomic.Bool
	syncedC    chan struct{}
	discovered chan struct{} // closed after the first complete discovery
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	done       chan struct{}

	// The discovery loop's own state: whether the last discovery failed (to log changes only).
	discoveryFailing statelog.State[bool]

	// The worker's own state.
	reported  map[dnsrecord.ObjectRef]tracked
	conflicts map[string]tracked
	current   map[currentKey]int
	leading   atomic.Bool // whether this replica reports rejections (SetLeading)
	pending   []string
	// statusPending: DNSEndpoints whose status to write once their names are handed on.
	statusPending []dnsrecord.ObjectRef

	status atomic.Pointer[statusWriter] // started with the DNSEndpoint informer

	published publications // what each object published, as the writer tells (Published)
}

// New returns a Watcher that talks to the API server of rc. Start starts it.
func New(rc *rest.Config, opts Options) (*Watcher, error) {
	health := newAPIHealth()
	health.observed = true
	rc = withRecoveryRate(rc)
	kcfg := rest.CopyConfig(rc)
	kcfg = rest.AddUserAgent(kcfg, DefaultComponent)
	kcfg.Wrap(health.observe)
	kcfg.ContentType = runtime.ContentTypeProtobuf
	kcfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(kcfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	gcfg := rest.AddUserAgent(rest.CopyConfig(rc), DefaultComponent)
	gcfg.Wrap(health.observe)
	gw, err := gwclient.NewForConfig(gcfg)
	if err != nil {
		return nil, fmt.Errorf("gateway-api client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(gcfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	w := NewForClients(kube, listingGatewayClient{gw}, opts)
	w.health = health
	w.probe = kube.Discovery().RESTClient()
	w.dyn = listingDynamicClient{dyn}
	w.crdServes = crdServesVia(dyn)
	return w, nil
}

// NewForClients returns a Watcher that uses the given clients (e.g. fakes in tests); the kinds
// served are asked from kube's discovery client.
func NewForClients(kube kubernetes.Interface, gw gwclient.Interface, opts Options) *Watcher {
	w := &Watcher{
		opts: opts, cfg: opts.Config, observer: opts.Observer, interval: opts.DiscoveryInterval,
		kube: kube, gw: gw, slim: newSlimmer(&opts.Config), desired: source.NewDesired(),
		kinds:   map[string]*kindInformer{},
		syncedC: make(chan struct{}), discovered: make(chan struct{}), done: make(chan struct{}),
		health:    newAPIHealth(),
		reported:  map[dnsrecord.ObjectRef]tracked{},
		conflicts: map[string]tracked{},
		current:   map[currentKey]int{},
		// Without a name the queue publishes no metrics. Its goroutine (for AddAfter: a
		// rejection looked at again once its grace ends) ends at ShutDown.
		queue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[dnsrecord.ObjectRef]{}),
	}
	if w.observer == nil {
		w.observer = nopObserver{}
	}
	w.leading.Store(!opts.ReportWhenLeading)
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
	w.broadcaster.StartRecordingToSink(eventSink{ctx: ctx, events: w.kube.CoreV1().Events("")})
	w.recorder = w.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: w.opts.Component})

	if w.opts.watches(source.KindIngress) {
		w.startInformer(ctx, source.KindIngress, "v1", false, newIngressInformer(w.kube), w.namespacesOf(source.KindIngress))
	}
	w.startInformer(ctx, KindNamespace, "v1", false, newNamespaceInformer(w.kube), w.namespacesOf(KindNamespace))
	if w.opts.watches(source.KindService) {
		w.startServiceInformers(ctx)
	}
	if w.probe != nil {
		w.wg.Go(func() { w.probeLoop(ctx, w.probe) })
	}
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
// than once, and without Start. It returns promptly whatever the API server does: every request
// (discovery, lists and watches, Event writes) runs under the Watcher's context, and the worker
// stops at the next item rather than draining the queue; only an OnChange call in progress is
// waited for. The Event broadcaster's own goroutine is not waited for: it ends when its write,
// which Stop cancels, returns.
func (w *Watcher) Stop() {
	w.lifecycle.Lock()
	started, cancel := w.started, w.cancel
	w.lifecycle.Unlock()
	if !started {
		w.queue.ShutDown() // its delaying goroutine runs from NewForClients
		return
	}
	cancel()
	<-w.done
}

// Done is closed once a started Watcher has stopped.
func (w *Watcher) Done() <-chan struct{} { return w.done }

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
