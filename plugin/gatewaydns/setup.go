package gatewaydns

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	coreparse "github.com/coredns/coredns/plugin/pkg/parse"
	mwtls "github.com/coredns/coredns/plugin/pkg/tls"
	"github.com/coredns/coredns/plugin/transfer"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/mirror"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
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
	options        []string // the stanza's option lines as written, for publishKey
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

	publish     *publishConfig // nil: this stanza does not publish
	publishOnly bool           // publish, and leave answering the zone to the plugins after it
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
	reloading := true
	c.OnFirstStartup(func() error { reloading = false; return nil })
	c.OnStartup(func() error {
		if err := st.start(reloading); err != nil {
			return err
		}
		starting.add(st)
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

func parse(c *caddy.Controller) (*config, error) {
	root := dnsserver.GetConfig(c).Root
	cfg := &config{
		prefix:      record.DefaultPrefix,
		etcd:        store.Config{Endpoints: []string{store.DefaultEndpoint}},
		minLeaseTTL: index.DefaultMinLeaseTTL,
		maxLeaseTTL: index.DefaultMaxLeaseTTL,
		negativeTTL: index.DefaultNegativeTTL,
		leaseGrace:  mirror.DefaultGrace,
		apex:        newApex(),
	}
	if !c.Next() {
		return nil, c.ArgErr()
	}
	cfg.zones = plugin.OriginsFromArgsOrServerBlock(c.RemainingArgs(), c.ServerBlockKeys)
	cfg.server = serverLabel(c)
	pc := &publishConfig{source: source.Config{ControllerName: defaultController}}
	publishing := false
	for c.NextBlock() {
		opt, args := c.Val(), c.RemainingArgs()
		cfg.options = append(cfg.options, fmt.Sprintf("%q", append([]string{opt}, args...)))
		ok, err := parsePublishOption(opt, args, pc)
		if err != nil {
			return nil, c.Errf("%v", err)
		}
		if ok {
			publishing = true
			if opt == "owner" {
				if err := claimOwner(c, pc.owner); err != nil {
					return nil, err
				}
			}
			continue
		}
		if err := parseOption(c, opt, args, cfg, root); err != nil {
			return nil, err
		}
		if opt == "notify-key" {
			cfg.notifyAt = fmt.Sprintf("%s:%d", c.File(), c.Line())
		}
	}
	if publishing || cfg.publishOnly {
		if pc.owner == "" {
			return nil, c.Errf("publishing needs 'owner ID', the id this cluster's records carry")
		}
		if pc.registry != nil {
			if pc.registry.Owner == "" {
				return nil, c.Errf("txt-prefix, txt-suffix and txt-wildcard-replacement describe the TXT registry of 'txt-owner-id ID', which is missing")
			}
			if err := pc.registry.Check(); err != nil {
				return nil, c.Errf("%v", err)
			}
		}
		include := pc.domainFilter
		if len(include) == 0 {
			include = cfg.zones
		}
		pc.source.DomainFilter = source.NewDomainFilter(include, pc.excludeDomains)
		pc.source.Zones = source.NewDomainFilter(cfg.zones, nil)
		cfg.publish = pc
	}
	if c.Next() {
		return nil, c.Errf("%s may be used once per server block", pluginName)
	}
	return cfg, nil
}

// ownersKey keys, in the CoreDNS instance's storage, the owners claimed by its stanzas so far
// and where. The storage is the instance's, so a reload starts with none.
type ownersKey struct{}

// claimOwner refuses a second stanza of one owner in one Corefile: the two would campaign in
// one election, and the names of the one that never leads would never be published.
func claimOwner(c *caddy.Controller, owner string) error {
	claimed, _ := c.Get(ownersKey{}).(map[string]string)
	if at, ok := claimed[owner]; ok {
		return c.Errf("owner %q is already published by the stanza at %s: two stanzas of one owner share one election, so one of them would never publish; merge them or give each its own owner", owner, at)
	}
	if claimed == nil {
		claimed = map[string]string{}
		c.Set(ownersKey{}, claimed)
	}
	claimed[owner] = fmt.Sprintf("%s:%d", c.File(), c.Line())
	return nil
}

// defaultController is external-dns's controller name, so that objects annotated for it
// keep publishing after the migration.
const defaultController = "dns-controller"

func parseOption(c *caddy.Controller, opt string, args []string, cfg *config, root string) error {
	switch opt {
	case "endpoint":
		if len(args) == 0 {
			return c.Errf("endpoint needs at least one URL")
		}
		cfg.etcd.Endpoints = args
	case "path":
		if len(args) != 1 {
			return c.Errf("path needs exactly one argument")
		}
		cfg.prefix = args[0]
	case "credentials":
		if len(args) != 2 {
			return c.Errf("credentials needs 2 arguments, username and password")
		}
		cfg.etcd.Username, cfg.etcd.Password = args[0], args[1]
	case "tls": // [CERT KEY [CACERT]]
		for i := range args {
			if !filepath.IsAbs(args[i]) && root != "" {
				args[i] = filepath.Join(root, args[i])
			}
		}
		tc, err := mwtls.NewTLSConfigFromArgs(args...)
		if err != nil {
			return c.Errf("tls: %v", err)
		}
		cfg.etcd.TLS = tc
		cfg.etcdTLSFiles = nil
		for _, f := range args {
			b, err := os.ReadFile(filepath.Clean(f))
			if err != nil {
				return c.Errf("tls: %v", err)
			}
			cfg.etcdTLSFiles = append(cfg.etcdTLSFiles, b...)
		}
	case "fallthrough":
		cfg.fall = append([]string{}, args...)
	case "min-lease-ttl", "max-lease-ttl":
		if len(args) != 1 {
			return c.Errf("%s needs exactly one duration", opt)
		}
		ttl, err := parseTTL(args[0])
		if err != nil {
			return c.Errf("invalid %s %q: %v", opt, args[0], err)
		}
		if opt == "min-lease-ttl" {
			cfg.minLeaseTTL = ttl
		} else {
			cfg.maxLeaseTTL = ttl
		}
	case "lease-grace":
		if len(args) != 1 {
			return c.Errf("lease-grace needs exactly one duration")
		}
		d, err := time.ParseDuration(args[0])
		if err != nil || d < 0 {
			return c.Errf("invalid lease-grace %q: a duration such as 5s, or 0 to delete at once", args[0])
		}
		cfg.leaseGrace = d
	case "negative-ttl":
		if len(args) != 1 {
			return c.Errf("negative-ttl needs exactly one duration")
		}
		if err := setNegativeTTL(args[0], cfg); err != nil {
			return c.Errf("invalid negative-ttl %q: %v", args[0], err)
		}
	case "soa", "nameserver", "notify", "notify-source", "notify-key", "transfer-synthetic":
		if err := parseTransferOption(opt, args, cfg); err != nil {
			return c.Errf("%v", err)
		}
	case "publish-only":
		if len(args) != 0 {
			return c.Errf("publish-only takes no arguments")
		}
		cfg.publishOnly = true
	case "exact-names":
		if len(args) != 0 {
			return c.Errf("exact-names takes no arguments")
		}
		cfg.exactNames = true
	case "explain":
		if len(args) != 0 {
			return c.Errf("explain takes no arguments")
		}
		cfg.explain = true
	case "no_apex_fallback":
		if len(args) != 0 {
			return c.Errf("no_apex_fallback takes no arguments")
		}
		cfg.noApexFallback = true
	case "stubzones", "debug", "upstream":
		// Accepted and ignored, as the stock etcd plugin does, so its Corefiles keep working.
		log.Warningf("Option %q is ignored, as in the stock etcd plugin", opt)
	default:
		return c.Errf("unknown property '%s'", opt)
	}
	return nil
}

// parseTTL reads seconds ("30") or a Go duration ("5m"), as the stock etcd plugin does.
func parseTTL(s string) (uint32, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return uint32(n), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("want seconds or a duration such as 30s, 5m, 1h")
	}
	if d < 0 || d.Seconds() > float64(^uint32(0)) {
		return 0, errors.New("out of range")
	}
	return uint32(d.Seconds()), nil
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

// publishKey is what two stanzas must have in common to share a publisher across a reload:
// the same stanza, word for word, with the same certificates and kubeconfig behind it, in a
// server block of the same address, which the publisher's series carry: a reload that moves
// the block to another port hands the owner over to a new publisher, as a changed stanza does.
func (c *config) publishKey() string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q\n", c.server, c.zones, c.options)
	h.Write(c.etcdTLSFiles)
	if c.publish != nil && c.publish.kubeconfig != "" {
		kubeconfig, _ := os.ReadFile(c.publish.kubeconfig) // unreadable: starting the publisher says so
		h.Write(kubeconfig)
	}
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
