package gatewaydns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/batchrun"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/catalog"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/handover"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/publish"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/xfr"
)

// stanza runs the roles of one stanza: serve (a feed: an index kept current by etcd
// watchers) and publish (package publish: sources feeding a writer). It starts with its
// CoreDNS instance and stops with it; only the feed and the publisher may live on, shared
// with the stanza of the next instance.
type stanza struct {
	cfg      *config
	index    *index.Index  // the index of own, the feed this stanza starts when none is running
	prefixes []string      // the key prefixes of the zones, each watched on its own
	own      *feed         // nil when publish-only
	publish  *publish.Role // nil when the stanza does not publish

	// serving is what the handler answers from: the feed's index once it has loaded, until
	// then a bridge's (see bridgeFor), if there is one.
	serving atomic.Pointer[backend]

	mu      sync.Mutex
	feed    *feed // the feed in use, own or shared; nil before start and after stop
	bridge  *feed
	cancel  context.CancelFunc // ends the wait for the feed's first load
	stopped chan struct{}      // closed when that wait returned
	batch   *batchrun.Run      // the batched UDP path; nil when off

	// transfers send the zones to secondaries (AXFR, IXFR) and NOTIFY them of changes, from
	// what the stanza answers from (records), and the catalog of the zones (nil: none).
	transfers *xfr.Transfers
	catalog   *catalog.Zone
}

// newStanza prepares the roles of the stanza cfg; nothing runs until start.
func newStanza(cfg *config) *stanza {
	st := &stanza{cfg: cfg}
	if cfg.xfr.Catalog != "" {
		st.catalog = catalog.New(cfg.xfr.Catalog, cfg.zones)
	}
	st.transfers = xfr.New(xfr.Stanza{Server: cfg.server, Zones: cfg.zones, Apex: cfg.apex, NegativeTTL: cfg.negativeTTL,
		Options: plugin.Options{NoApexFallback: cfg.noApexFallback}, Records: st.records, Catalog: st.catalog}, cfg.xfr)
	if cfg.publish != nil {
		st.publish = publish.NewRole(cfg.publish)
	}
	if cfg.publishOnly {
		return st
	}
	zones := strings.Join(cfg.zones, " ")
	st.prefixes = record.Outermost(record.ZoneDirs(cfg.prefix, cfg.zones))
	var own *feed // the feed outlives the stanza when the next instance shares it: not st.own
	st.index = index.New(index.Options{
		Prefix:       cfg.prefix,
		Prefixes:     st.prefixes,
		ZonePrefixes: record.ZoneDirs(cfg.prefix, cfg.zones),
		MinLeaseTTL:  cfg.minLeaseTTL,
		NegativeTTL:  &cfg.negativeTTL,
		MaxLeaseTTL:  cfg.maxLeaseTTL,
		ExactNames:   cfg.exactNames,
		Invalid: func(key string, err error) {
			invalidRecords.WithLabelValues(cfg.server, zones).Inc()
			log.Warningf("Skipping a value that cannot be served: %v", err)
		},
		Clash: func(name string, clash bool, names int) {
			own.clashes.Store(int64(names))
			cnameClashes.WithLabelValues(cfg.server, zones).Set(float64(names))
			if clash {
				log.Warningf("Records of %s mix a CNAME with addresses or another CNAME; answering from the older claim only (CNAME rule)", name)
			} else {
				log.Infof("Records of %s no longer mix a CNAME with addresses or another CNAME", name)
			}
		},
		FailOpen: func(name string, failing bool, names int) { failOpen(cfg.server, zones, name, failing, names) },
	})
	own = newFeed(cfg.feedKey(), cfg.server, zones, st.index, st.prefixes, cfg.etcd)
	own.grace = cfg.leaseGrace
	own.health.Config = cfg.steering.health
	own.path = cfg.prefix
	st.own = own
	st.serving.Store(newBackend(st.index, nil, &cfg.steering))
	return st
}

// answering is the backend the stanza answers from now, nil when it only publishes.
func (s *stanza) answering() *backend {
	if s.cfg.publishOnly {
		return nil
	}
	return s.serving.Load()
}

// records is what the stanza's transfers read: answering's, nil for none.
func (s *stanza) records() xfr.Records {
	if b := s.answering(); b != nil {
		return b
	}
	return nil
}

// seriesAtZero creates the series of the stanza's roles at zero.
func (s *stanza) seriesAtZero() {
	if s.own != nil {
		metricsAtZero(s.own.server, s.own.zones)
	}
	if s.publish != nil {
		s.publish.SeriesAtZero()
	}
}

// reloadLoadWait bounds how long a reload waits for the first load of a feed that nothing can
// stand in for (a zone new to this process): the new instance starts answering when its
// startup returns, and the load from a reachable etcd takes milliseconds. With etcd
// unreachable, the reload goes on and the zone answers SERVFAIL until it loads, as at start.
const reloadLoadWait = 2 * time.Second

// start takes the running feed of the same configuration, or starts its own, and starts the
// publish role. At the process's start it waits for neither etcd nor Kubernetes (readiness
// tells when they answered); on a reload, see reloadLoadWait.
func (s *stanza) start(reloading bool) error {
	if s.own != nil {
		f, err := feeds.Acquire(s.own.key, func() (*feed, error) { return s.own, s.own.start() })
		if err != nil {
			return fmt.Errorf("%s: %w", pluginName, err)
		}
		// A feed that has loaded nothing yet, just started or shared with the previous
		// instance that started it while etcd was away (itself answering from a bridge):
		// answer from a loaded feed of the same zones, if one runs, before the feed counts as
		// started, so readiness never sees the empty index. Any sequence of reloads during
		// an outage keeps answering from the last records loaded.
		bridged := !f.index.Loaded() && s.bridgeUntilLoaded(f)
		if !bridged {
			s.serving.Store(newBackend(f.index, f.history, &s.cfg.steering))
		}
		s.mu.Lock()
		s.feed = f
		s.mu.Unlock()
		if !bridged && reloading {
			handover.WaitClosed(f.loaded, reloadLoadWait)
		}
		metricsAtZero(f.server, f.zones)
		// The clashes of the feed taken: a shared feed keeps its own, a new one has none yet.
		// Set here rather than at setup, which would zero a shared feed's while they last.
		cnameClashes.WithLabelValues(f.server, f.zones).Set(float64(f.clashes.Load()))
		steeringFailOpen.WithLabelValues(f.server, f.zones).Set(float64(f.index.FailingOpen()))
	}
	if s.publish != nil {
		if err := s.publish.Start(); err != nil {
			_ = s.stop()
			return fmt.Errorf("%s: %w", pluginName, err)
		}
	}
	return nil
}

// bridgeUntilLoaded answers the zones a loaded feed of another configuration serves from it,
// if one runs, until f has loaded; it reports whether one did.
func (s *stanza) bridgeUntilLoaded(f *feed) bool {
	b, shared := bridgeFor(f)
	if b == nil {
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	s.mu.Lock()
	s.bridge, s.cancel, s.stopped = b, cancel, stopped
	s.mu.Unlock()
	bridge := newBackend(b.index, b.history, &s.cfg.steering)
	bridge.only = shared
	s.serving.Store(bridge)
	log.Infof("Answering %s from the previous configuration's records until the new one has loaded them", strings.Join(slices.Sorted(maps.Keys(shared)), " "))
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
			return
		case <-f.loaded:
		}
		s.serving.Store(newBackend(f.index, f.history, &s.cfg.steering))
		s.mu.Lock()
		b, s.bridge = s.bridge, nil
		s.mu.Unlock()
		if b != nil {
			if err := feeds.Release(b.key, b); err != nil {
				log.Error(err)
			}
		}
	}()
	return true
}

// batchThrough runs the batched UDP path run (nil: none) until stop.
func (s *stanza) batchThrough(run *batchrun.Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batch = run
}

// stop stops the publish role, the batched UDP path, the NOTIFYs and the transfers, and lets
// go of the feed and the bridge. Every wait in it is bounded, so a reload or SIGTERM finishes
// in seconds whatever state etcd and the Kubernetes API are in.
func (s *stanza) stop() error {
	var errs []error
	var wg sync.WaitGroup
	if s.publish != nil {
		wg.Go(s.publish.Stop)
	}
	s.mu.Lock()
	f, b, cancel, stopped, batch := s.feed, s.bridge, s.cancel, s.stopped, s.batch
	s.feed, s.bridge, s.cancel, s.stopped, s.batch = nil, nil, nil, nil, nil
	s.mu.Unlock()
	if err := batch.Stop(); err != nil {
		errs = append(errs, err)
	}
	s.transfers.Stop()
	if cancel != nil {
		cancel()
		<-stopped // returns at once: it only waits on the index and the context
	}
	for _, held := range []*feed{b, f} {
		if held != nil {
			if err := feeds.Release(held.key, held); err != nil {
				errs = append(errs, err)
			}
		}
	}
	s.forgetRecords()
	wg.Wait()
	return errors.Join(errs...)
}

// forgetRecords lets go of the stanza's index once it has stopped. The stanza may outlive its
// instance: a transfer plugin goroutine of the instance that blocks writing to a secondary
// that stopped reading (package xfr, runs.go) holds the instance's plugin chain, and this stanza
// with it, for as long as the secondary keeps its connection open. A query still in flight
// keeps the backend it took; the ones after it are answered SERVFAIL, as before a load.
func (s *stanza) forgetRecords() {
	if s.cfg.publishOnly {
		return
	}
	s.serving.Store(stoppedBackend)
	s.mu.Lock()
	s.own, s.index = nil, nil
	s.mu.Unlock()
}

// stoppedBackend is what a stopped stanza answers from: an index that never loads.
var stoppedBackend = newBackend(index.New(index.Options{}), nil, nil)

// ready: the index answered from holds a full load, and the sources have synced. etcd
// being unreachable later never makes a stanza unready: it answers from memory meanwhile.
//
// A role that has not started yet answers for what it takes over. On a reload the ready plugin
// asks the new instance's stanza before its startup has run (the ready plugin's OnStartup
// comes first), and between the start of its serve role and of its publish role; the stanza
// takes over from what runs now, so it is as ready as that: a loaded feed of the same zones, a
// ready publisher of the same owner. With nothing running (the process's first start) a role
// that has not started is not ready.
func (s *stanza) ready() bool {
	return s.serveReady() && s.publishReady()
}

func (s *stanza) serveReady() bool {
	if s.cfg.publishOnly {
		return true
	}
	s.mu.Lock()
	started := s.feed != nil
	s.mu.Unlock()
	if !started {
		return feeds.Any(func(f *feed) bool { return f.index.Loaded() && len(s.own.sharedZones(f)) > 0 })
	}
	return s.serving.Load().Loaded()
}

func (s *stanza) publishReady() bool {
	return s.publish == nil || s.publish.Ready()
}
