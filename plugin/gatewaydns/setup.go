package gatewaydns

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	coreparse "github.com/coredns/coredns/plugin/pkg/parse"
	"github.com/coredns/coredns/plugin/transfer"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/mirror"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/publish"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

var log = clog.NewWithPlugin(pluginName)

func init() {
	plugin.Register(pluginName, setup)
	// CoreDNS refuses CHAOS questions unless a plugin asks for them: explain answers them.
	// Stanzas without explain refuse them themselves, as before.
	dnsserver.EnableChaos[pluginName] = struct{}{}
	caddy.RegisterEventHook(pluginName, onInstanceStarted)
}

// config is one parsed stanza. Options and defaults are the stock etcd plugin's, so that
// renaming etcd to gatewaydns in a Corefile serves the same answers.
type config struct {
	server         string // the server block's address(es), as metrics label them: see serverLabel
	zones          []string
	prefix         string
	etcd           store.Config
	etcdTLSFiles   []byte   // the content of the tls files, so that a rotated certificate is a new configuration
	options        []string // the stanza's option lines as written, for the publish role's Key
	root           string   // the server block's root, which relative tls file names are read from
	minLeaseTTL    uint32
	maxLeaseTTL    uint32
	negativeTTL    uint32
	negativeTTLSet bool
	apex           *apex // the SOA's fields and the nameservers
	// transferSynthetic puts into a transfer what the plugin synthesises too: an SRV record
	// for every address (port 0 where none is stored) and the record-id names.
	transferSynthetic bool
	notify            notifyConfig  // where NOTIFYs go, and the key they are signed with
	notifyAt          string        // the file and line of notify-key, for its error at startup
	leaseGrace        time.Duration // how long a key deleted by its lease's expiry is still answered
	noApexFallback    bool
	explain           bool
	exactNames        bool     // answer a name from its own key and record-id children only
	fall              []string // nil: no fallthrough; empty: every zone
	batch             batchMode
	batchAt           string // the file and line of udp-batch, for its error at startup

	publish     *publish.Config // nil: this stanza does not publish
	publishOnly bool            // publish, and leave answering the zone to the plugins after it
}

func setup(c *caddy.Controller) error {
	cfg, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	g, st := newStanza(cfg)
	if !caddy.Started() {
		// The process's first instance: its series exist before the prometheus plugin's
		// startup opens /metrics, so that the first scrape has every one of them. A reload
		// creates those of a block new to the process in its startup instead (stanza.start):
		// created here, a reload that fails would leave them exported, for a server block
		// that does not exist.
		st.seriesAtZero()
	}
	watchRestarts(c)
	var configs []*dnsserver.Config // the server block's, for the batched UDP path
	if !cfg.publishOnly && cfg.batch != batchOff {
		configs = blockConfigs(c)
		announceWith(configs)
	}
	reloading := true
	c.OnFirstStartup(func() error { reloading = false; return nil })
	c.OnStartup(func() error {
		if err := st.start(reloading); err != nil {
			return err
		}
		starting.add(st)
		if g.packer != nil {
			g.packer.writes.Store(int32(writesFor(inFront(dnsserver.GetConfig(c)))))
		}
		if configs != nil {
			run, err := newBatchRun(g, cfg.batch, cfg.batchAt, configs, plugin.OriginsFromArgsOrServerBlock(nil, c.ServerBlockKeys), cfg.server)
			if err != nil {
				return plugin.Error(pluginName, err)
			}
			st.batchThrough(run)
		}
		if t, ok := dnsserver.GetConfig(c).Handler("transfer").(*transfer.Transfer); ok && !cfg.publishOnly {
			keyName, key, _, err := cfg.notify.signingKey(dnsserver.GetConfig(c).TsigSecret)
			if err != nil {
				return plugin.Error(pluginName, fmt.Errorf("%s: %w", cfg.notifyAt, err))
			}
			st.notifyThrough(g, t, keyName, key)
		}
		return nil
	})
	c.OnShutdown(st.stop)
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		g.Next = next
		return g
	})
	return nil
}

// parse reads the stanza of c: the options of the serve role (setup_options.go) and of the
// publish role (package publish); the stanza publishes when one of the latter, or
// publish-only, is given.
func parse(c *caddy.Controller) (*config, error) {
	cfg := &config{
		prefix:      record.DefaultPrefix,
		etcd:        store.Config{Endpoints: []string{store.DefaultEndpoint}},
		minLeaseTTL: index.DefaultMinLeaseTTL,
		maxLeaseTTL: index.DefaultMaxLeaseTTL,
		negativeTTL: index.DefaultNegativeTTL,
		leaseGrace:  mirror.DefaultGrace,
		apex:        newApex(),
		root:        dnsserver.GetConfig(c).Root,
	}
	if !c.Next() {
		return nil, c.ArgErr()
	}
	cfg.zones = plugin.OriginsFromArgsOrServerBlock(c.RemainingArgs(), c.ServerBlockKeys)
	cfg.server = serverLabel(c)
	pc := publish.NewConfig()
	publishing, err := parseBlock(c, cfg, pc)
	if err != nil {
		return nil, err
	}
	if publishing || cfg.publishOnly {
		if err := pc.Finish(cfg.publishStanza()); err != nil {
			return nil, c.Errf("%v", err)
		}
		cfg.publish = pc
	}
	if c.Next() {
		return nil, c.Errf("%s may be used once per server block", pluginName)
	}
	return cfg, nil
}

// parseBlock reads the stanza's options: the publish role's into pc, the others into cfg.
// publishing tells whether any of the publish role's was given.
func parseBlock(c *caddy.Controller, cfg *config, pc *publish.Config) (bool, error) {
	publishing := false
	for c.NextBlock() {
		opt, args := c.Val(), c.RemainingArgs()
		cfg.options = append(cfg.options, fmt.Sprintf("%q", append([]string{opt}, args...)))
		known, err := pc.Parse(opt, args)
		if err != nil {
			return false, c.Errf("%v", err)
		}
		if known {
			publishing = true
			if opt == "owner" {
				if err := ownersOf(c).Claim(pc.Owner, fmt.Sprintf("%s:%d", c.File(), c.Line())); err != nil {
					return false, c.Errf("%v", err)
				}
			}
			continue
		}
		if known, err = serveOptions.Parse(cfg, opt, args); err != nil {
			return false, c.Errf("%v", err)
		}
		if !known {
			return false, c.Errf("unknown property '%s'", opt)
		}
		switch opt {
		case "notify-key":
			cfg.notifyAt = fmt.Sprintf("%s:%d", c.File(), c.Line())
		case "udp-batch":
			cfg.batchAt = fmt.Sprintf("%s:%d", c.File(), c.Line())
		}
	}
	return publishing, nil
}

// publishStanza is what the publish role takes from the stanza.
func (c *config) publishStanza() publish.Stanza {
	return publish.Stanza{Server: c.server, Zones: c.zones, Prefix: c.prefix, Etcd: c.etcd, Options: c.options, EtcdTLSFiles: c.etcdTLSFiles}
}

// ownersKey keys, in the CoreDNS instance's storage, the owners claimed by its stanzas so far
// and where. The storage is the instance's, so a reload starts with none.
type ownersKey struct{}

// ownersOf returns the owners published by the Corefile of c so far.
func ownersOf(c *caddy.Controller) publish.Owners {
	owners, _ := c.Get(ownersKey{}).(publish.Owners)
	if owners == nil {
		owners = publish.Owners{}
		c.Set(ownersKey{}, owners)
	}
	return owners
}

// zonePrefixes are the etcd key prefixes of the zones' records, e.g. "/skydns/cluster/openmcp/"
// for openmcp.cluster: the server reads and watches only these, so an etcd role with read on
// its zones is all it needs. A zone inside another is covered by the outer one's prefix.
func zonePrefixes(prefix string, zones []string) []string {
	all := zoneKeyPrefixes(prefix, zones)
	slices.Sort(all)
	var out []string
	for _, p := range all {
		if len(out) > 0 && strings.HasPrefix(p, out[len(out)-1]) {
			continue // equal to, or inside, the previous one
		}
		out = append(out, p)
	}
	return out
}

// feedKey is what two stanzas must have in common to share a feed across a reload: the same
// records, read from the same etcd as the same user, answered with the same options, for the
// same server block (by its address). The server is in the key so that a feed's series belong
// to one server block, and two blocks on the same zones export their own numbers: a reload
// of a block keeps its address and shares its feed as before. Two blocks that would otherwise
// share a feed (same zones, same etcd, same options, other ports) watch and hold the records
// twice; merging them into one block (one key per port, or bind) shares them again. The other
// way, one feed fanned out to one set of series per block attached to it, would have to give a
// block attaching to a running feed the feed's gauges at once (etcd_reachable is set on a
// change only), and drop a block's series when it detaches: state for a Corefile that has
// a cheap fix.
func (c *config) feedKey() string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q %q %q %q %d %d %d %t %d\n", c.server, c.zones, c.prefix, c.etcd.Endpoints, c.etcd.Username,
		c.etcd.Password, c.minLeaseTTL, c.maxLeaseTTL, c.negativeTTL, c.exactNames, c.leaseGrace)
	h.Write(c.etcdTLSFiles)
	return hex.EncodeToString(h.Sum(nil))
}

// serverLabel is the server label of the stanza's metrics: the address of its server block's
// server, as CoreDNS forms Server.Addr (dnsserver.groupConfigsByListenAddr: the transport, the
// listen host and the port, resolved), which is what metrics.WithServer returns for the block's
// queries and what coredns_dns_requests_total and the cache plugin's metrics carry: e.g.
// "dns://:53", or "dns://127.0.0.53:53" with bind 127.0.0.53. So a gatewaydns series joins the
// block's request series on server.
//
// The block's keys hold its transports and ports (InspectServerBlocks has made each one
// transport://zone:port by the time a plugin is set up); its listen hosts are those bind set on
// its first key (bind comes before gatewaydns in plugin.cfg, and CoreDNS gives every key the
// first one's hosts).
//
// A block with several addresses (bind with several addresses, keys with other ports or
// transports) runs one server per address but one stanza: one feed, one publisher. Its series
// carry every address, sorted and joined by a space, as the zones label joins the zones: one
// series per stanza, so that a sum counts a watch event, a transfer or a leader once. A series
// per address would count them once per address: sum by (owner) of writer_leader would be 2
// with one leader, and GatewayDNSWriterLeader would fire. The price: such a block's requests
// are matched by its addresses rather than joined on server (see the plugin's README).
func serverLabel(c *caddy.Controller) string {
	hosts := dnsserver.GetConfig(c).ListenHosts
	var addrs []string
	for _, key := range c.ServerBlockKeys {
		trans, hostPort := coreparse.Transport(key)
		_, port, err := plugin.SplitHostPort(hostPort)
		if err != nil || port == "" {
			port = dnsserver.Port // a key as a test writes it; CoreDNS's own always have a port
		}
		for _, h := range hosts {
			addr := net.JoinHostPort(h, port)
			if resolved, err := net.ResolveTCPAddr("tcp", addr); err == nil {
				addr = resolved.String()
			}
			addrs = append(addrs, trans+"://"+addr)
		}
	}
	slices.Sort(addrs)
	return strings.Join(slices.Compact(addrs), " ")
}
