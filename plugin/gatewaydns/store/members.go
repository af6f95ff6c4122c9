package store

import (
	"context"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Members keeps a client's new requests and streams off the etcd members that stop answering.
//
// A frozen member (SIGSTOP, a hung host or disk) keeps its TCP connection open, so gRPC goes on
// picking it, round robin, for one request or stream in three until its keep-alive closes the
// connection: 10 s, since etcd refuses pings more often than every 5 s. A request that went to
// it costs an attempt timeout, and the retry has the same one-in-three chance: a Gateway change
// took three attempts now and then, over 3 s. When an attempt fails, its caller calls Suspect,
// which asks every member for its status on a connection of its own; the client is then set
// to use only the members that answered, so no new attempt goes to the one that did not. While
// a member is left out it is asked again every recheck, and used again once it answers.
//
// Requests and streams already on a member left out end as their attempt does: leaving
// closes its connection once they have.
type Members struct {
	client    *clientv3.Client
	endpoints []string // all, in the configured order
	log       Logger

	mu      sync.Mutex
	waiting []chan struct{} // suspicions the next round answers
	wake    chan struct{}
	using   []string // what the client uses now
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
)

// NewMembers watches over c's endpoints; nothing runs until Run. With a single endpoint there
// is nothing to choose from and Members does nothing.
func NewMembers(c *clientv3.Client, endpoints []string, log Logger) *Members {
	return &Members{
		client:    c,
		endpoints: slices.Clone(endpoints),
		using:     slices.Clone(endpoints),
		log:       log,
		wake:      make(chan struct{}, 1),
	}
}

func (m *Members) active() bool { return m != nil && len(m.endpoints) > 1 }

// Suspect tells m that an attempt failed on a member it cannot name, and waits until every
// member has been asked (at most about probeTimeout) or ctx ends: the caller's next attempt
// then goes to a member that answers. A nil Members returns at once.
func (m *Members) Suspect(ctx context.Context) {
	if !m.active() {
		return
	}
	done := make(chan struct{})
	m.mu.Lock()
	m.waiting = append(m.waiting, done)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
	// Bounded on its own as well: a Run that has ended answers no one.
	t := time.NewTimer(2 * probeTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-ctx.Done():
	case <-t.C:
	}
}

// Run answers suspicions and rechecks the members left out until ctx ends. The client's owner
// runs it and ends it before closing the client.
func (m *Members) Run(ctx context.Context) {
	if !m.active() {
		return
	}
	t := time.NewTimer(recheck)
	defer t.Stop()
	for {
		var again <-chan time.Time
		if m.leftOut() {
			again = t.C
		}
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		case <-again:
		}
		m.mu.Lock()
		waiting := m.waiting
		m.waiting = nil
		m.mu.Unlock()
		m.round(ctx)
		for _, w := range waiting {
			close(w)
		}
		t.Reset(recheck) // since Go 1.23 a Reset drops a tick not yet received

	}
}

func (m *Members) leftOut() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.using) < len(m.endpoints)
}

// round asks every member for its status at once and sets the client to use those that
// answered; when none did (etcd is down, or the network is) it uses them all, as configured:
// there is nothing to prefer, and the client's own reconnects find the first to come back.
func (m *Members) round(ctx context.Context) {
	answered := make([]bool, len(m.endpoints))
	var wg sync.WaitGroup
	for i, ep := range m.endpoints {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			_, err := m.client.Status(pctx, ep)
			answered[i] = err == nil
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	var use []string
	for i, ep := range m.endpoints {
		if answered[i] {
			use = append(use, ep)
		}
	}
	none := len(use) == 0
	if none {
		use = m.endpoints
	}
	m.mu.Lock()
	before := m.using
	m.using = use
	m.mu.Unlock()
	if slices.Equal(before, use) {
		return
	}
	m.client.SetEndpoints(use...)
	m.report(before, use, none)
}

// report logs a change of the members used: once per change, and only when it happens.
func (m *Members) report(before, after []string, none bool) {
	if none {
		m.log.Warningf("No etcd member of %v answers a status request; using them all", m.endpoints)
		return
	}
	for _, ep := range before {
		if !slices.Contains(after, ep) {
			m.log.Warningf("Leaving etcd member %s: it did not answer a status request within %s; using %v until it does", ep, probeTimeout, after)
		}
	}
	for _, ep := range after {
		if !slices.Contains(before, ep) {
			m.log.Infof("Using etcd member %s again: it answers", ep)
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
