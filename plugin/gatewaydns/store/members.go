package store

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/connectivity"
)

// Members keeps a client on the etcd members that answer, and follows the cluster's members.
//
// The configured endpoints are a seed or a front, as the first member list read says
// (members_follow.go). When one of them is a member's client URL they are a seed: every round
// asks the cluster for its member list and uses the members' client URLs, so a member added to
// the cluster is used without a Corefile change, and replacing every original member one by one
// (remove one, add one) keeps the client on the cluster, though the list then names none of the
// seeds. A seed that is not a member's URL (a DNS name of them all) stays while it answers; one
// that neither is a member nor answers (a member removed) is dropped, and tried again only when
// nothing else answers. When none of them is a member's URL they are a front the operator put
// before etcd (a load balancer, a proxy, a tunnel), which the client must go through, not
// around: they are used as they are, and the member list is not followed (said once).
//
// A frozen member (SIGSTOP, a hung host or disk) keeps its TCP connection open, so gRPC goes on
// picking it, round robin, for one request or stream in three until its keep-alive closes the
// connection: 10 s, since etcd refuses pings more often than every 5 s. A request that went to
// it costs an attempt timeout, and the retry has the same one-in-three chance: a Gateway change
// took three attempts now and then, over 3 s. So every round asks every member for its status
// on a connection of its own, and the client is set to use only the members that answered: no
// new attempt goes to one that did not. While a member is left out it is asked again every
// recheck, and used again once it answers.
//
// A round runs when a caller suspects a member (Suspect: an attempt failed), when the client's
// connection is lost (no endpoint left to use) and when it comes back, while a member is left
// out (every recheck), and when the member list, read every syncEvery (every syncChanging for
// changingFor after it changed), changed: a member removed is noticed by nobody whose requests
// it did not serve, and a member added by nobody at all, and the client must know the new
// members before the last of the old ones goes. The
// statuses and the member list feed the client's Lineage, which so also checks the store at
// every reconnection.
//
// Requests and streams already on a member left out end as their attempt does: leaving
// closes its connection once they have.
type Members struct {
	client  *clientv3.Client
	seeds   []string // the configured endpoints, in their order
	log     Logger
	lineage *Lineage // the client's, when it has one (Connect)

	mu        sync.Mutex
	endpoints []string        // the candidates: seeds still in use, then the other members' URLs
	waiting   []chan struct{} // suspicions the next round answers
	wake      chan struct{}
	using     []string        // what the client uses now
	members   []string        // the member URLs at the last round that read them, sorted
	changed   time.Time       // when a round last found members other than the round before
	relist    chan struct{}   // a round found them changed: followMembers reads them soon
	used      map[string]bool // every endpoint used so far (Run's goroutine's)
	following atomic.Uint32   // a following: seed or front, decided at the first member list (follows)
}

// Logger is where Members says when it leaves a member and when it uses it again; clog.P is one.
type Logger interface {
	Infof(format string, args ...any)
	Warningf(format string, args ...any)
}

const (
	// probeTimeout bounds a member's answer to a status request, which it gives from memory
	// (no raft round): a member that needs longer is as good as frozen for a writer whose
	// attempt takes a second, and is used again at the next recheck if it answers then.
	probeTimeout = 250 * time.Millisecond
	// recheck is how often the members left out are asked again: a thawed member is used
	// again within about a second.
	recheck = time.Second
	// syncEvery is how often the member list is read when nothing else calls for a round,
	// as clientv3's AutoSyncInterval would (which would put back the members left out): a
	// member added to a healthy cluster is used within it. One linearizable read.
	syncEvery = 5 * time.Second
	// syncChanging is how often it is read for changingFor after the members changed.
	syncChanging = time.Second
	changingFor  = 30 * time.Second
	// listTimeout bounds the member list, a linearizable read.
	listTimeout = time.Second
)

// NewMembers watches over c, seeded with endpoints; nothing runs until Run.
func NewMembers(c *clientv3.Client, endpoints []string, log Logger) *Members {
	m := &Members{
		client:    c,
		seeds:     slices.Clone(endpoints),
		endpoints: slices.Clone(endpoints),
		using:     slices.Clone(endpoints),
		used:      map[string]bool{},
		log:       log,
		wake:      make(chan struct{}, 1),
		relist:    make(chan struct{}, 1),
	}
	for _, ep := range endpoints {
		m.used[ep] = true
	}
	return m
}

// Connect returns a client of cfg (see NewClient) with its Members and Lineage: the client's
// owner runs the Members until before it closes the client.
func Connect(cfg Config, log Logger) (*clientv3.Client, *Members, error) {
	lineage := NewLineage(log)
	c, err := newClient(cfg, lineage.dialOptions()...)
	if err != nil {
		return nil, nil, err
	}
	m := NewMembers(c, c.Endpoints(), log)
	m.lineage = lineage
	return c, m, nil
}

// Lineage is the client's Lineage (nil: none, which never finds a new store).
func (m *Members) Lineage() *Lineage {
	if m == nil {
		return nil
	}
	return m.lineage
}

// Suspect tells m that an attempt failed on a member it cannot name, and waits until a round
// has asked every member (at most about 2 × probeTimeout) or ctx ends: the caller's next
// attempt then goes to a member that answers. A nil Members returns at once.
func (m *Members) Suspect(ctx context.Context) {
	if m == nil {
		return
	}
	done := make(chan struct{})
	m.mu.Lock()
	m.waiting = append(m.waiting, done)
	m.mu.Unlock()
	m.poke()
	// Bounded on its own as well: a Run that has ended answers no one.
	t := time.NewTimer(2 * probeTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-ctx.Done():
	case <-t.C:
	}
}

func (m *Members) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Run makes the rounds until ctx ends. The client's owner runs it and ends it before closing
// the client; it returns once the goroutine it starts has ended.
func (m *Members) Run(ctx context.Context) {
	if m == nil {
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { m.followConnection(ctx) })
	wg.Go(func() { m.followMembers(ctx) })
	again := time.NewTimer(recheck)
	defer again.Stop()
	for {
		var recheckC <-chan time.Time
		if m.leftOut() {
			again.Reset(recheck) // since Go 1.23 a Reset drops a tick not yet received
			recheckC = again.C
		}
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		case <-recheckC:
		}
		m.mu.Lock()
		waiting := m.waiting
		m.waiting = nil
		m.mu.Unlock()
		m.round(ctx)
		for _, w := range waiting {
			close(w)
		}
	}
}

// followConnection calls for a round when the client's connection is lost (no endpoint it
// uses answers: the members may have moved) and when it comes back (the store may be another).
func (m *Members) followConnection(ctx context.Context) {
	onStateChanges(ctx, m.client.ActiveConnection(), func(from, to connectivity.State) bool {
		if to != from && (to == connectivity.Ready || to == connectivity.TransientFailure) {
			m.poke()
		}
		return true
	})
}

func (m *Members) leftOut() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.using) < len(m.endpoints)
}

// round asks every candidate for its status at once and, when one answered, the cluster for
// its members (followList); the client then uses those that answered. When none did (etcd is down, or the
// network is) it uses every endpoint it knows, seeds too: there is nothing to prefer, and the
// client's own reconnects find the first to come back.
func (m *Members) round(ctx context.Context) {
	m.mu.Lock()
	candidates := m.endpoints
	m.mu.Unlock()
	answered := m.probe(ctx, candidates)
	if ctx.Err() != nil {
		return
	}
	if len(answered) > 0 {
		candidates = m.followList(ctx, candidates, answered)
	}
	var use []string
	for _, ep := range candidates {
		if _, ok := answered[ep]; ok {
			use = append(use, ep)
		}
	}
	none := len(use) == 0
	if none {
		use = union(m.seeds, candidates)
	}
	m.mu.Lock()
	before := m.using
	m.using = use
	m.endpoints = candidates
	m.mu.Unlock()
	if slices.Equal(before, use) {
		return
	}
	m.client.SetEndpoints(use...)
	m.report(before, use, none)
	for _, ep := range use {
		m.used[ep] = true
	}
}

// probe asks each of endpoints for its status at once and returns those that answered.
func (m *Members) probe(ctx context.Context, endpoints []string) map[string]struct{} {
	ok := make([]bool, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			_, err := m.client.Status(pctx, ep)
			ok[i] = err == nil
		})
	}
	wg.Wait()
	answered := map[string]struct{}{}
	for i, ep := range endpoints {
		if ok[i] {
			answered[ep] = struct{}{}
		}
	}
	return answered
}

// report logs a change of the members used: once per change, and only when it happens.
func (m *Members) report(before, after []string, none bool) {
	if none {
		m.log.Warningf("No etcd member of %v answers a status request; using them all", after)
		return
	}
	for _, ep := range before {
		if !slices.Contains(after, ep) {
			m.log.Warningf("Leaving etcd member %s: it did not answer a status request within %s, or left the cluster; using %v", ep, probeTimeout, after)
		}
	}
	for _, ep := range after {
		switch {
		case slices.Contains(before, ep):
		case m.used[ep]:
			m.log.Infof("Using etcd member %s again: it answers", ep)
		default:
			m.log.Infof("Using etcd member %s: the cluster lists it and it answers", ep)
		}
	}
}

// Using returns the endpoints the client uses now.
func (m *Members) Using() []string {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.using)
}
