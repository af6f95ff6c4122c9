package gatewaydns

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/handover"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/healthcheck"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/healthfeed"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/history"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/mirror"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

// feed is the serve role's state: an index and the etcd watchers that keep it current. It
// outlives the CoreDNS instance that started it: a reload whose stanza serves the same zones
// from the same etcd in the same way shares the running feed instead of reading everything
// again, so a Corefile edit while etcd is unreachable loses no answer and needs no etcd at
// all. A feed stops when the last stanza using it lets go.
type feed struct {
	key      string // what must be equal for two stanzas to share it: see config.feedKey
	server   string // the server block's address, as metrics label it: see serverLabel
	zones    string // the zones, as metrics label them
	path     string // the records' path (the Corefile's path)
	index    *index.Index
	clashes  atomic.Int64 // names of the index that mix a CNAME with other data, now
	prefixes []string
	etcd     store.Config
	grace    time.Duration // mirror.Watcher.Grace
	metrics  watchMetrics
	health   healthfeed.Feed // the health checks of the index's records

	loaded     chan struct{} // closed once the index holds a full load of every prefix
	loadedOnce sync.Once

	client  *clientv3.Client
	history *history.Reader // the client's history, for IXFRs from before the index's journal
	cancel  context.CancelFunc
	done    chan struct{} // closed when every watcher returned
}

// start connects and starts one watcher per zone prefix. It does not wait for etcd.
func (f *feed) start() error {
	etcd := f.etcd
	etcd.WatchStreams = etcdWatchStreams.WithLabelValues(f.server, f.zones)
	client, members, err := store.Connect(etcd, log)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.history = &history.Reader{Client: client, MaxKeys: index.MaxDiffKeys}
	var watchers sync.WaitGroup
	if err := f.health.Start(ctx, &watchers, f.index, f.server); err != nil {
		cancel()
		_ = store.Close(client, f.zones, handover.StopWait)
		return err
	}
	f.client, f.cancel, f.done = client, cancel, make(chan struct{})
	watchers.Go(func() { members.Run(ctx) })
	for _, prefix := range f.prefixes {
		w := &mirror.Watcher{Client: client, Prefix: prefix, Sink: f.index, Observer: feedObserver{f.metrics, f}, Log: log, Grace: f.grace, Members: members}
		watchers.Go(func() { w.Run(ctx) })
	}
	go func() {
		watchers.Wait()
		close(f.done)
	}()
	return nil
}

// newFeed prepares a feed; nothing runs until start.
func newFeed(key, server, zones string, ix *index.Index, prefixes []string, etcd store.Config) *feed {
	return &feed{
		key:      key,
		server:   server,
		zones:    zones,
		index:    ix,
		prefixes: prefixes,
		etcd:     etcd,
		metrics:  watchMetrics{server: server, zones: zones, count: ix.Len},
		loaded:   make(chan struct{}),
	}
}

// feedObserver counts what the watchers do and tells the feed when its index has loaded.
type feedObserver struct {
	watchMetrics
	f *feed
}

func (o feedObserver) Resynced(reason string, keys int, took time.Duration) {
	o.watchMetrics.Resynced(reason, keys, took)
	if o.f.index.Loaded() {
		o.f.loadedOnce.Do(func() { close(o.f.loaded) })
	}
}

// Stop ends the watchers and closes the client, each wait bounded by handover.StopWait, and forgets
// the feed's series unless another feed carries the same labels: the stanza of a reload that
// changed the block's stanza, which has started by now (CoreDNS starts the new instance before
// it stops the old one).
func (f *feed) Stop() error {
	if f.cancel == nil {
		return nil
	}
	f.cancel()
	if !handover.WaitClosed(f.done, handover.StopWait) {
		log.Errorf("Watchers of %s did not stop within %s of their end; leaving them", f.zones, handover.StopWait)
	}
	f.health.Stop()
	if !feeds.Any(func(o *feed) bool { return o.server == f.server }) {
		healthcheck.ForgetSeries(f.server)
	}
	// After the watchers returned: a watcher still running could make the series again.
	if !feeds.Any(func(o *feed) bool { return o.server == f.server && o.zones == f.zones }) {
		forgetServeSeries(f.server, f.zones)
	}
	if err := store.Close(f.client, f.zones, handover.StopWait); err != nil {
		return fmt.Errorf("%s: %w", pluginName, err)
	}
	return nil
}

// feeds are the running feeds of the process, by key.
var feeds = handover.NewRegistry[*feed]()

// bridgeFor returns a running, loaded feed of another configuration (other endpoints,
// credentials, options or zones) that serves some of own's zones from the same records, held
// until released, and those zones: a stanza answers them from it until its own feed has
// loaded, so that a reload that changes the stanza while etcd is unreachable keeps answering
// from the last good records. A zone no running feed serves answers SERVFAIL until it loads.
func bridgeFor(own *feed) (*feed, map[string]bool) {
	var shared map[string]bool
	f, _ := feeds.Share(func(f *feed) bool {
		if f == own || !f.index.Loaded() {
			return false
		}
		shared = own.sharedZones(f)
		return len(shared) > 0
	})
	if f == nil {
		return nil, nil
	}
	return f, shared
}

// sharedZones are the zones of f that o serves from the same records: the same zone, read
// from the same key path.
func (f *feed) sharedZones(o *feed) map[string]bool {
	shared := map[string]bool{}
	if o.path != f.path {
		return shared
	}
	others := strings.Fields(o.zones)
	for _, z := range strings.Fields(f.zones) {
		if slices.Contains(others, z) {
			shared[z] = true
		}
	}
	return shared
}
