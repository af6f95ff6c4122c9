package publish

import (
	"sync"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/handover"
)

// publishers are the running publishers of the process, by Config.Key: a reload that leaves
// a publishing stanza as it was keeps its publisher running, leadership, caches and all,
// instead of handing the owner over to a new one through the election.
var publishers = handover.NewRegistry[*publisher]()

// readyBridge bounds how long a new publisher counts as ready on its predecessor's behalf: a
// configuration whose sources never sync must show as unready.
const readyBridge = time.Minute

// Role is a stanza's hold on the publisher of its Config: the one already running with the
// same Key (a reload that left the stanza as it was), or one it starts. It starts and stops
// with the stanza's CoreDNS instance; the publisher stops when the last stanza holding it
// lets go.
type Role struct {
	cfg *Config

	mu  sync.Mutex
	key string
	p   *publisher // nil before Start and after Stop
}

// NewRole returns the role of cfg, not started.
func NewRole(cfg *Config) *Role { return &Role{cfg: cfg} }

// SeriesAtZero creates the role's series at zero, before it starts (see Config.seriesAtZero).
func (r *Role) SeriesAtZero() { r.cfg.seriesAtZero() }

// Start takes the running publisher of the same Key, or starts one. It waits for neither etcd
// nor Kubernetes: Ready tells when the sources have synced.
func (r *Role) Start() error {
	owner := r.cfg.Owner
	predecessorReady := ownerReady(owner)
	key := r.cfg.Key()
	p, err := publishers.Acquire(key, func() (*publisher, error) {
		p, err := startPublisher(r.cfg)
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

// Stop lets go of the publisher; the last stanza to let go of it stops it.
func (r *Role) Stop() {
	r.mu.Lock()
	key, p := r.key, r.p
	r.p = nil
	r.mu.Unlock()
	if p == nil {
		return
	}
	if err := publishers.Release(key, p); err != nil {
		log.Error(err)
	}
}

// Ready: the sources have synced and the replica leads and has synced its records, or stands
// by with a healthy leader (publisher.ready); or, while it starts after a reload that changed
// the stanza, its predecessor was ready (publisher.readyUntil): the cluster's names were being
// published, and a reload must not make a replica unready.
//
// Before Start it answers for what it takes over: on a reload the ready plugin asks the new
// instance's stanza before its startup has run, and the role is as ready as a running
// publisher of its owner. With none running (the process's first start) it is not ready.
func (r *Role) Ready() bool {
	r.mu.Lock()
	p := r.p
	r.mu.Unlock()
	if p == nil {
		return ownerReady(r.cfg.Owner)
	}
	return p.ready()
}

// ownerReady reports whether a running publisher of owner is ready.
func ownerReady(owner string) bool {
	return publishers.Any(func(p *publisher) bool { return p.cfg.Owner == owner && p.ready() })
}
