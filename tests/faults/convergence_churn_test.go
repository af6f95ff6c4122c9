package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// routeLife is when the test asked for a route's delete (zero: never). A route whose calls
// failed (the API server was down) is what the API server says at the end.
type routeLife struct {
	deleteStart time.Time
}

// churn changes the routes and the Gateway 5 times a second: creates (50%), deletes (30%) and
// address changes (20%), each drawn from rng. It never fails the test: a call refused while
// the API server restarts is counted and the next one drawn.
type churn struct {
	k8s    *gatewayfixture.Cluster
	rng    *rand.Rand
	mu     sync.Mutex
	routes map[string]*routeLife // by hostname, every route ever asked for
	live   []string              // hostnames of routes created and not asked to delete
	next   int
	counts map[string]int // "create ok", "delete failed", ...
}

func (c *churn) run(ctx context.Context) {
	c.counts = map[string]int{}
	for i := range 10 { // the landscape's first routes
		h := fmt.Sprintf("r%04d.%s", i, convZone)
		c.routes[h] = &routeLife{}
		c.live = append(c.live, h)
	}
	c.next = 10
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c.step(ctx)
	}
}

func (c *churn) step(ctx context.Context) {
	octx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	p := c.rng.IntN(10)
	switch {
	case p < 5 || len(c.live) == 0:
		name := fmt.Sprintf("r%04d", c.next)
		c.next++
		h := name + "." + convZone
		c.mu.Lock()
		c.routes[h] = &routeLife{}
		c.mu.Unlock()
		err := c.k8s.TryHTTPRoute(octx, convNS, name, "infra", "public", h)
		c.count("create", err)
		if err == nil {
			c.live = append(c.live, h)
		}
	case p < 8:
		i := c.rng.IntN(len(c.live))
		h := c.live[i]
		c.live = append(c.live[:i], c.live[i+1:]...)
		c.mu.Lock()
		c.routes[h].deleteStart = time.Now()
		c.mu.Unlock()
		name, _, _ := strings.Cut(h, ".")
		err := c.k8s.GW.GatewayV1().HTTPRoutes(convNS).Delete(octx, name, metav1.DeleteOptions{})
		c.count("delete", err)
	default:
		err := c.k8s.TrySetGatewayAddresses(octx, "infra", "public", fmt.Sprintf("203.0.113.%d", 2+c.rng.IntN(250)))
		c.count("address change", err)
	}
}

func (c *churn) count(op string, err error) {
	if err != nil {
		op += " failed"
	} else {
		op += " ok"
	}
	c.counts[op]++
}

// summary is what the churn did; call it once run returned.
func (c *churn) summary() string {
	var parts []string
	for op, n := range c.counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, op))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// life is h's routeLife, nil for a name the churn never asked for.
func (c *churn) life(h string) *routeLife {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.routes[h]
}

// nameHistory follows the keys under convPrefix through an etcd watch and records each moment
// a name lost its last key: what the test checks against the routes' lives.
type nameHistory struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	counts  map[string]int
	emptied []emptied
}

type emptied struct {
	name string
	at   time.Time // when the watch told it: not before it happened
	rev  int64
}

func watchNames(t *testing.T, cluster *testenv.EtcdCluster) *nameHistory {
	h := &nameHistory{}
	h.follow(t, cluster)
	t.Cleanup(h.stop)
	return h
}

// follow counts each name's keys in etcd now and follows them from there.
func (h *nameHistory) follow(t *testing.T, cluster *testenv.EtcdCluster) {
	cli := cluster.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	gctx, gcancel := context.WithTimeout(ctx, 10*time.Second)
	resp, err := cli.Get(gctx, convPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	gcancel()
	if err != nil {
		cancel()
		t.Fatalf("reading etcd: %v", err)
	}
	counts := map[string]int{}
	for _, kv := range resp.Kvs {
		if name, ok := record.RecordName("skydns", string(kv.Key)); ok {
			counts[name]++
		}
	}
	h.mu.Lock()
	h.cancel, h.done, h.counts = cancel, make(chan struct{}), counts
	done := h.done
	h.mu.Unlock()
	wch := cli.Watch(ctx, convPrefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	go func() {
		defer close(done)
		for wr := range wch {
			h.apply(wr.Events)
		}
	}()
}

// apply counts the events of one watch response, a revision at a time: a transaction that
// puts a name's new key and deletes its old one leaves the name with a key.
func (h *nameHistory) apply(events []*clientv3.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	for i := 0; i < len(events); {
		rev := events[i].Kv.ModRevision
		touched := map[string]int{}
		for ; i < len(events) && events[i].Kv.ModRevision == rev; i++ {
			ev := events[i]
			name, ok := record.RecordName("skydns", string(ev.Kv.Key))
			if !ok {
				continue
			}
			if _, seen := touched[name]; !seen {
				touched[name] = h.counts[name]
			}
			switch {
			case ev.Type == clientv3.EventTypeDelete:
				h.counts[name]--
			case ev.IsCreate():
				h.counts[name]++
			}
		}
		for name, before := range touched {
			if before > 0 && h.counts[name] <= 0 {
				h.emptied = append(h.emptied, emptied{name: name, at: now, rev: rev})
			}
		}
	}
}

func (h *nameHistory) stop() {
	h.mu.Lock()
	cancel, done := h.cancel, h.done
	h.mu.Unlock()
	cancel()
	<-done
}

// deletedWhileAlive lists each name that lost its last key while its route existed: before the
// test asked for the route's delete, or never asked and the route is still there (exists).
func (h *nameHistory) deletedWhileAlive(c *churn, exists map[string]bool) (out []string, emptiedNames int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.emptied {
		life := c.life(e.name)
		if life == nil {
			continue
		}
		if exists[e.name] || life.deleteStart.IsZero() || e.at.Before(life.deleteStart) {
			asked := "never asked to delete"
			if !life.deleteStart.IsZero() {
				asked = "delete asked at " + life.deleteStart.Format("15:04:05.000")
			}
			out = append(out, fmt.Sprintf("%s at revision %d, seen at %s (%s; exists at the end: %v)",
				e.name, e.rev, e.at.Format("15:04:05.000"), asked, exists[e.name]))
		}
	}
	return out, len(h.emptied)
}
