package publish

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

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/handover"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/kubesource"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// publisher keeps this cluster's names in etcd: Kubernetes objects -> kubesource -> Writer.
type publisher struct {
	cfg    *Config
	kube   *kubesource.Watcher
	writer *writer.Writer
	client *clientv3.Client
	// members keeps the client on etcd's members that answer; run with the writer.
	members *store.Members
	cancel  context.CancelFunc
	done    chan struct{}
	// started is when the publisher started: the election holds its readiness back at most
	// electionReadyBound after it.
	started time.Time
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
func (c *Config) kindOptions() kubesource.Options { return kubesource.Options{Kinds: c.Kinds} }

// startPublisher connects to etcd and Kubernetes and starts publishing. It waits for neither.
func startPublisher(cfg *Config) (*publisher, error) {
	etcd := cfg.Stanza.Etcd
	etcd.WatchStreams = writerWatchStreams.WithLabelValues(cfg.Stanza.Server, cfg.Owner)
	client, members, err := store.Connect(etcd, log)
	if err != nil {
		return nil, err
	}
	p, err := newPublisher(cfg, client, members)
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

// newPublisher wires the sources to a writer on client, which members keeps on etcd's members.
// Nothing runs until run.
func newPublisher(cfg *Config, client *clientv3.Client, members *store.Members) (*publisher, error) {
	rc, err := kubesource.RestConfig(cfg.Kubeconfig, cfg.Kubecontext)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	p := &publisher{cfg: cfg, done: make(chan struct{}), started: time.Now()}
	obs := &metrics{server: cfg.Stanza.Server, owner: cfg.Owner, dryRun: cfg.DryRun}
	opts := cfg.kindOptions()
	opts.Config, opts.Observer = cfg.Source, obs
	opts.ReportWhenLeading = true // writerEvents.Leading: the replicas of an owner report once
	opts.Conditions = !cfg.DryRun // a dry run publishes nothing to be Ready
	opts.OnChange = func(names []string) { p.writer.Enqueue(names...) }
	p.kube, err = kubesource.New(rc, opts)
	if err != nil {
		return nil, fmt.Errorf("kubernetes sources: %w", err)
	}
	cfg.seriesAtZero()
	p.members = members
	wcfg := cfg.writerConfig(desired{p.kube}, nil, p.members)
	wcfg.Observer = writerEvents{metrics: obs, kube: p.kube,
		lead: &leadership{owner: cfg.Owner, identity: wcfg.Identity, dryRun: cfg.DryRun}}
	p.writer, err = writer.New(client, wcfg)
	if err != nil {
		return nil, fmt.Errorf("writer: %w", err)
	}
	obs.desired = p.kube.Desired()
	return p, nil
}

// writerConfig is the writer of the role: what it writes (from want), where and how.
func (c *Config) writerConfig(want writer.Desired, obs writer.Observer, members *store.Members) writer.Config {
	zones := c.DomainFilter
	if len(zones) == 0 {
		zones = c.Stanza.Zones
	}
	return writer.Config{
		Prefix:    c.Stanza.Prefix,
		Owner:     c.Owner,
		Identity:  replicaIdentity(),
		Policy:    c.Policy,
		Conflicts: c.Conflicts,
		// The sources' whole filter, exclusions included: a name it refuses is neither written
		// nor deleted, as in external-dns, so adding an exclusion never erases records there.
		Allow: func(name string) bool {
			return plugin.Zones(c.Stanza.Zones).Matches(name+".") != "" && c.Source.DomainFilter.Match(name)
		},
		Zones:    zones,
		Lease:    c.Lease,
		DryRun:   c.DryRun,
		Registry: c.Registry,
		Desired:  want,
		Observer: obs,
		Members:  members,
	}
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
				log.Errorf("Writer for owner %q stopped: %v", p.cfg.Owner, err)
			}
		})
		<-ctx.Done()
		p.kube.Stop() // at the same time as the writer's resign: a stop waits for the longer one only
		writing.Wait()
	}()
	return nil
}

// electionReadyBound is the longest the election holds a publisher's readiness back (see
// ready): a replica that cannot reach etcd at its start must not keep its cluster's own DNS
// unready for longer.
const electionReadyBound = 30 * time.Second

// ready: the sources have synced and the replica has found its place in the election: it leads
// and has synced its records, or it stands by behind a live leader (writer.Settled); or, after
// a reload, its predecessor was ready (readyUntil). A replica that waits out the key of a
// crashed leader of another identity is not ready until it leads, so that a rollout does not
// take down the leader's pod before a successor can write. Readiness never depends on etcd
// after that (it stays through an outage), and at most electionReadyBound at the start.
func (p *publisher) ready() bool {
	if time.Now().UnixNano() < p.readyUntil.Load() {
		return true
	}
	return p.kube.Synced() && (p.writer.Settled() || time.Since(p.started) >= electionReadyBound)
}

// Stop ends the writer and the sources, each wait bounded: the writer resigns if etcd
// answers in time, else its election key expires with its TTL. It forgets the publisher's
// series unless another publisher carries the same labels, as the serve role's feeds do.
func (p *publisher) Stop() error {
	p.cancel()
	server, owner := p.cfg.Stanza.Server, p.cfg.Owner
	if !handover.WaitClosed(p.done, handover.StopWait) {
		log.Errorf("Writer for owner %q did not stop within %s of its end; leaving it", owner, handover.StopWait)
	}
	if !publishers.Any(func(o *publisher) bool { return o.cfg.Stanza.Server == server && o.cfg.Owner == owner }) {
		forgetSeries(server, owner)
	}
	if err := store.Close(p.client, "owner "+owner, handover.StopWait); err != nil {
		return fmt.Errorf("%s: %w", pluginName, err)
	}
	return nil
}
