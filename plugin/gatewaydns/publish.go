package gatewaydns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/kubesource"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/txtregistry"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// publishConfig is the publish role of a stanza: which objects to read and how to write them.
type publishConfig struct {
	owner          string
	policy         plan.Policy
	conflicts      plan.ConflictMode
	lease          time.Duration
	dryRun         bool
	kubeconfig     string
	kubecontext    string
	domainFilter   []string
	excludeDomains []string
	kinds          []string // empty: every kind but the opt-in ones (kubesource: Service, DNSEndpoint)
	source         source.Config
	// registry is external-dns's TXT registry to take over (txt-owner-id, txt-prefix, ...).
	registry *txtregistry.Config
}

// publisher keeps this cluster's names in etcd: Kubernetes objects -> kubesource -> Writer.
type publisher struct {
	cfg    *config
	kube   *kubesource.Watcher
	writer *writer.Writer
	client *clientv3.Client
	// members steers the client off etcd members that stop answering; run with the writer.
	members *store.Members
	cancel  context.CancelFunc
	done    chan struct{}
	// readyUntil (Unix nanoseconds): the publisher was started by a reload while another of
	// its owner was ready; it counts as ready until its own sources have synced, or this time
	// has passed. It belongs to the publisher, not to the stanza that started it: a stanza of
	// the next reload that shares it inherits it, however soon that reload comes.
	readyUntil atomic.Int64
}

// replicaIdentity is what this replica's election key holds: the pod's name from POD_NAME
// (the downward API), else "<hostname>/<pid>", which in a container is "<pod name>/1". Either
// stays the same across a restart of the container and differs between pods, so a restarted
// process takes over from the key its crashed predecessor left (writer.Election's ghost rule)
// instead of waiting out its TTL; two processes on one host (tests, a laptop) differ by pid.
func replicaIdentity() string {
	if pod := os.Getenv("POD_NAME"); pod != "" {
		return pod
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}

// kindOptions are the options that choose the kinds the publish role reads.
func kindOptions(pc *publishConfig) kubesource.Options { return kubesource.Options{Kinds: pc.kinds} }

// newPublisher wires the sources to a writer on client. Nothing runs until run.
func newPublisher(cfg *config, client *clientv3.Client) (*publisher, error) {
	pc := cfg.publish
	rc, err := kubesource.RestConfig(pc.kubeconfig, pc.kubecontext)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	p := &publisher{cfg: cfg, done: make(chan struct{})}
	obs := &publishMetrics{server: cfg.server, owner: pc.owner, dryRun: pc.dryRun}
	opts := kindOptions(pc)
	opts.Config, opts.Observer = pc.source, obs
	opts.ReportWhenLeading = true // writerEvents.Leading: the replicas of an owner report once
	opts.OnChange = func(names []string) { p.writer.Enqueue(names...) }
	p.kube, err = kubesource.New(rc, opts)
	if err != nil {
		return nil, fmt.Errorf("kubernetes sources: %w", err)
	}
	publishMetricsAtZero(cfg.server, pc.owner, pc.dryRun, kindOptions(pc))
	identity := replicaIdentity()
	zones := pc.domainFilter
	if len(zones) == 0 {
		zones = cfg.zones
	}
	p.members = store.NewMembers(client, cfg.etcd.Endpoints, log)
	p.writer, err = writer.New(client, writer.Config{
		Prefix:    cfg.prefix,
		Owner:     pc.owner,
		Identity:  identity,
		Policy:    pc.policy,
		Conflicts: pc.conflicts,
		// The sources' whole filter, exclusions included: a name it refuses is neither written
		// nor deleted, as in external-dns, so adding an exclusion never erases records there.
		Allow: func(name string) bool {
			return plugin.Zones(cfg.zones).Matches(name+".") != "" && pc.source.DomainFilter.Match(name)
		},
		Zones:    zones,
		Lease:    pc.lease,
		DryRun:   pc.dryRun,
		Registry: pc.registry,
		Desired:  desired{p.kube},
		Observer: writerEvents{publishMetrics: obs, kube: p.kube},
		Members:  p.members,
	})
	if err != nil {
		return nil, fmt.Errorf("writer: %w", err)
	}
	obs.desired = p.kube.Desired()
	return p, nil
}

// run starts the sources and the writer; they stop when ctx is done, and done closes after.
func (p *publisher) run(ctx context.Context) error {
	if err := p.kube.Start(ctx); err != nil {
		return fmt.Errorf("starting kubernetes sources: %w", err)
	}
	go func() {
		defer close(p.done)
		var writing sync.WaitGroup
		writing.Go(func() { p.members.Run(ctx) })
		writing.Go(func() {
			if err := p.writer.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				log.Errorf("Writer for owner %q stopped: %v", p.cfg.publish.owner, err)
			}
		})
		<-ctx.Done()
		p.kube.Stop() // at the same time as the writer's resign: a stop waits for the longer one only
		writing.Wait()
	}()
	return nil
}

func (p *publisher) ready() bool {
	return p.kube.Synced() || time.Now().UnixNano() < p.readyUntil.Load()
}

// desired adapts the kubesource's merged endpoints to what the writer asks.
type desired struct{ kube *kubesource.Watcher }

func (d desired) Endpoint(name string) (record.Endpoint, bool) {
	return d.kube.Desired().Endpoint(name)
}

func (d desired) Names() []string { return d.kube.Desired().Names() }

func (d desired) Synced() bool { return d.kube.Synced() }

func (d desired) SyncedC() <-chan struct{} { return d.kube.SyncedC() }

// writerEvents reports what the writer could not do on the objects behind the name, as
// Warning Events, besides counting it.
type writerEvents struct {
	*publishMetrics
	kube *kubesource.Watcher
}

// Leading: only the leader reports rejections, so that the replicas of an owner do not each
// raise the same Event and count it.
func (w writerEvents) Leading(leading bool) {
	w.publishMetrics.Leading(leading)
	w.kube.SetLeading(leading)
}

func (w writerEvents) Conflict(c plan.Conflict) {
	w.publishMetrics.Conflict(c)
	reason := c.Detail
	if reason == "" {
		reason = fmt.Sprintf("owner %q holds this name in exclusive mode (claimed at revision %d, ours %d)", c.Winner, c.WinnerRevision, c.OwnRevision)
	}
	if c.Sources == nil { // no objects given: every object behind the name
		w.rejectName(c.Name, source.CauseConflict, reason)
		return
	}
	w.reject(c.Sources, c.Name, source.CauseConflict, reason) // the objects not told yet
}

// ClaimGuardsRefused: the etcd role predates the claim guards; claims still work, at the cost
// the guards were made to save. Said once per writer.
func (w writerEvents) ClaimGuardsRefused(prefix string, err error) {
	log.Warningf("Writer for owner %q may not write claim guards under %s (%v): claims compare each name's whole key range instead, which for a zone's apex reads the zone; grant the role readwrite on its names' paths below %s (deploy/etcd/roles.sh)", w.owner, prefix, err, prefix)
}

func (w writerEvents) Failed(name string, err error) {
	w.publishMetrics.Failed(name, err)
	w.rejectName(name, source.CausePublishFailed, err.Error())
}

func (w writerEvents) rejectName(name string, cause source.Cause, reason string) {
	ep, ok := w.kube.Desired().Endpoint(name)
	if !ok { // not a name: a zone the full sync could not read, or the election
		w.warnOnce(name, reason)
		return
	}
	w.reject(ep.Sources, name, cause, reason)
}

// reject reports name on each of objects.
func (w writerEvents) reject(objects []record.ObjectRef, name string, cause source.Cause, reason string) {
	for _, ref := range objects {
		w.kube.Reject(source.Rejection{Object: ref, Hostname: name, Cause: cause, Reason: reason})
	}
}

// publishers are the running publishers of the process, by configuration: a reload that
// leaves a publishing stanza as it was keeps its publisher running, leadership, caches and
// all, instead of handing the owner over to a new one through the election.
var publishers = newRegistry[*publisher]()

// startPublisher connects to etcd and Kubernetes and starts publishing. It waits for neither.
func startPublisher(cfg *config) (*publisher, error) {
	etcd := cfg.etcd
	etcd.WatchStreams = writerWatchStreams.WithLabelValues(cfg.server, cfg.publish.owner)
	client, err := store.NewClient(etcd)
	if err != nil {
		return nil, err
	}
	p, err := newPublisher(cfg, client)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	p.client = client
	ctx, cancel := context.WithCancel(context.Background())
	if err := p.run(ctx); err != nil {
		cancel()
		_ = client.Close()
		return nil, err
	}
	p.cancel = cancel
	return p, nil
}

// stop ends the writer and the sources, each wait bounded: the writer resigns if etcd
// answers in time, else its election key expires with its TTL. It forgets the publisher's
// series unless another publisher carries the same labels, as feed.stop does.
func (p *publisher) stop() error {
	p.cancel()
	owner := p.cfg.publish.owner
	if !waitClosed(p.done, stopWait) {
		log.Errorf("Writer for owner %q did not stop within %s of its end; leaving it", owner, stopWait)
	}
	if !publishers.any(func(o *publisher) bool { return o.cfg.server == p.cfg.server && o.cfg.publish.owner == owner }) {
		forgetPublishSeries(p.cfg.server, owner)
	}
	return closeClient(p.client, "owner "+owner)
}

// publishRole is a stanza's hold on its publisher.
type publishRole struct {
	mu  sync.Mutex
	key string
	p   *publisher
}

// readyBridge bounds how long a new publisher counts as ready on its predecessor's behalf: a
// configuration whose sources never sync must show as unready.
const readyBridge = time.Minute

func (r *publishRole) start(cfg *config) error {
	owner := cfg.publish.owner
	predecessorReady := publishers.any(func(o *publisher) bool { return o.cfg.publish.owner == owner && o.ready() })
	key := cfg.publishKey()
	p, err := publishers.acquire(key, func() (*publisher, error) {
		p, err := startPublisher(cfg)
		if err == nil && predecessorReady {
			p.readyUntil.Store(time.Now().Add(readyBridge).UnixNano())
		}
		return p, err
	})
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.key, r.p = key, p
	r.mu.Unlock()
	return nil
}

func (r *publishRole) stop() {
	r.mu.Lock()
	key, p := r.key, r.p
	r.p = nil
	r.mu.Unlock()
	if p == nil {
		return
	}
	if err := publishers.release(key, p); err != nil {
		log.Error(err)
	}
}

// started reports whether start has run and stop has not.
func (r *publishRole) started() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p != nil
}

// ready: the sources have synced, or, while they sync after a reload that changed the
// stanza, those of its predecessor had (publisher.readyUntil): the cluster's names were being
// published, and a reload must not make a replica unready.
func (r *publishRole) ready() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p != nil && r.p.ready()
}
