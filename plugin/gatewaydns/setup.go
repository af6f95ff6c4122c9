package gatewaydns

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	coreparse "github.com/coredns/coredns/plugin/pkg/parse"
	"github.com/coredns/coredns/plugin/transfer"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/batchrun"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/mirror"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/prepacked"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/publish"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/xfr"
)

func init() {
	plugin.Register(pluginName, setup)
	// CoreDNS refuses CHAOS questions unless a plugin asks for them: explain answers them.
	// Stanzas without explain refuse them themselves, as before.
	dnsserver.EnableChaos[pluginName] = struct{}{}
	caddy.RegisterEventHook(pluginName, onInstanceStarted)
}

func setup(c *caddy.Controller) error {
	cfg, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	g, st := newPlugin(cfg)
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
	if !cfg.publishOnly && cfg.batch != batchrun.Off {
		configs = batchrun.BlockConfigs(c)
		batchrun.AnnounceWith(configs)
	}
	reloading := true
	c.OnFirstStartup(func() error { reloading = false; return nil })
	c.OnStartup(func() error {
		if err := st.start(reloading); err != nil {
			return err
		}
		starting.add(st)
		if g.packer != nil {
			g.packer.SetWrites(prepacked.WritesFor(prepacked.InFront(dnsserver.GetConfig(c), pluginName)))
		}
		if configs != nil {
			answers := batchrun.Stanza{Zones: g.Zones, Server: cfg.server, Answer: g.appendBatched}
			run, err := batchrun.New(answers, cfg.batch, cfg.batchAt, configs, plugin.OriginsFromArgsOrServerBlock(nil, c.ServerBlockKeys))
			if err != nil {
				return plugin.Error(pluginName, err)
			}
			st.batchThrough(run)
		}
		if _, ok := dnsserver.GetConfig(c).Handler("transfer").(*transfer.Transfer); ok && !cfg.publishOnly {
			if err := st.transfers.StartNotifying(dnsserver.GetConfig(c).TsigSecret); err != nil {
				return plugin.Error(pluginName, fmt.Errorf("%s: %w", cfg.notifyAt, err))
			}
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

// newPlugin builds the roles of the stanza cfg and its handler; nothing runs until the
// stanza's start.
func newPlugin(cfg *config) (*GatewayDNS, *stanza) {
	st := newStanza(cfg)
	return newHandler(cfg, st), st
}

// parse reads the stanza of c: the options of the stanza and its serve role
// (setup_options.go, setup_apex.go), of the publish role (package publish) and of zone
// transfers (package xfr); the stanza publishes when one of the publish role's, or
// publish-only, is given.
func parse(c *caddy.Controller) (*config, error) {
	cfg := &config{
		prefix:      record.DefaultPrefix,
		etcd:        store.Config{Endpoints: []string{store.DefaultEndpoint}},
		minLeaseTTL: index.DefaultMinLeaseTTL,
		maxLeaseTTL: index.DefaultMaxLeaseTTL,
		negativeTTL: index.DefaultNegativeTTL,
		leaseGrace:  mirror.DefaultGrace,
		apex:        answer.NewApex(),
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
	if cfg.xfr.Catalog != "" {
		if cfg.zones, err = xfr.CatalogMembers(cfg.xfr.Catalog, cfg.zones, c.ServerBlockKeys); err != nil {
			return nil, c.Errf("%v", err)
		}
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
	if cfg.xfr.Transfer, err = xfr.StanzasOf(c); err != nil {
		return nil, err
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
		at := fmt.Sprintf("%s:%d", c.File(), c.Line())
		if known, err = serveOptions.Parse(cfg, opt, args); err == nil && !known {
			known, err = xfr.Options.Parse(&cfg.xfr, opt, args)
		}
		if err == nil && !known {
			known, err = cfg.steering.parse(opt, args, at)
		}
		if err != nil {
			return false, c.Errf("%v", err)
		}
		if !known {
			return false, c.Errf("unknown property '%s'", opt)
		}
		switch opt {
		case "notify-key":
			cfg.notifyAt = at
		case "udp-batch":
			cfg.batchAt = at
		}
	}
	return publishing, cfg.steering.finish(cfg.server, cfg.prefix, cfg.zones)
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
