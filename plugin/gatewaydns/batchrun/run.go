// Package batchrun runs the batched UDP path (package udpbatch) of a stanza in its CoreDNS
// server block: its own sockets on the server block's
// UDP addresses, answering from packed replies and handing everything else to the CoreDNS
// server of the address, whose listener it shares the port with.
//
// The kernel gives a datagram to a socket bound to its destination address before a socket
// bound to the wildcard, which is where CoreDNS listens unless `bind` says otherwise: so the
// path binds each address of the machine's interfaces, and takes every datagram sent to
// them, while CoreDNS's own socket answers those sent to an address added later (a link-local
// one among them), at its usual cost. Under `bind`, the path's sockets join the group of
// CoreDNS's socket of the same address (SO_REUSEPORT), which spreads clients over them by
// their address and port: CoreDNS's share is answered correctly, at its cost. A BPF program
// choosing the socket (SO_ATTACH_REUSEPORT_CBPF) would need the sockets' places in the group,
// which change as sockets come and go on a reload, or eBPF, which needs privileges a pod does
// not have.
package batchrun

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/packed"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/prepacked"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/udpbatch"
)

// Stanza is what a run answers for: the stanza's zones and metrics label, and its packed
// replies.
type Stanza struct {
	Zones  []string
	Server string // the server label of the stanza's metrics
	// Answer appends the packed reply to q for name (lower case, plain) in zone to dst, when
	// the stanza has one to give: nx tells an NXDOMAIN. ok is false for the server to answer.
	// With shuffle (loadbalance in front), the reply's addresses are shuffled, or ok is false
	// where they could not be.
	Answer func(dst []byte, q *packed.Query, name, zone string, from net.Addr, shuffle bool) (out []byte, nx, ok bool)
}

// Mode is the udp-batch option: on where nothing in front must see each question (Auto, the
// default), On (an error where something must), or Off.
type Mode int

const (
	Auto Mode = iota
	On
	Off
)

// allowed are the plugins that may run in front of gatewaydns in a server block with the
// batched UDP path: those that do not need to see the questions it answers (plain questions of
// the zone: they see every other one). Any other, known or not, keeps it off: log, dnstap,
// acl, rewrite, loadbalance, dns64, minimal, header, dnssec, tsig, trace, bufsize, local,
// template, the data plugins that could answer a name of the zone first (hosts, file, ...),
// shed, proxyproto, and plugins not in plugin.cfg (rrl). view is a server block's filter:
// checked on the block's configuration.
var allowed = map[string]bool{
	"metadata": true, "geoip": true, "cancel": true, "nsid": true, "bind": true, "debug": true, "ready": true,
	"health": true, "pprof": true, "prometheus": true, "errors": true, "any": true, "chaos": true, "transfer": true,
	"dynupdate": true, "cache": true,
}

// Run is a stanza's batched UDP path: one udpbatch.Path per CoreDNS server (address) of
// its server block, started when the server starts serving UDP.
type Run struct {
	st         Stanza
	zones      string              // the stanza's zones, as its metrics label them
	configs    []*dnsserver.Config // the server block's, one per key
	blockZones []string            // the server block's zones
	metrics    bool                // the block has prometheus: the path counts what it answers
	shuffle    bool                // the block has loadbalance: the path shuffles replies of addresses
	readers    int
	mu         sync.Mutex
	stopped    bool
	serving    map[string]bool // the server addresses it serves
}

// running are the runs waiting for, or running on, the servers of their configurations: a
// server announces itself (announceServer) to those whose configuration it serves.
var running = struct {
	sync.Mutex
	byConfig map[uintptr]*Run
}{byConfig: map[uintptr]*Run{}}

// BlockConfigs are the configurations of every key of c's server block: CoreDNS runs a
// plugin's setup for the first key only.
func BlockConfigs(c *caddy.Controller) []*dnsserver.Config {
	var out []*dnsserver.Config
	for j := range c.ServerBlockKeys {
		cc := *c
		cc.ServerBlockKeyIndex = j
		if cfg := dnsserver.GetConfig(&cc); !slices.Contains(out, cfg) {
			out = append(out, cfg)
		}
	}
	return out
}

// AnnounceWith makes the servers of configs announce themselves when they start serving UDP,
// through the writer decorator CoreDNS asks a configuration for then, and keeps the decorator
// a plugin in front set.
func AnnounceWith(configs []*dnsserver.Config) {
	for _, cfg := range configs {
		prev := cfg.UDPDecorateWriterFunc
		cfg.UDPDecorateWriterFunc = func(s *dnsserver.Server) dns.DecorateWriter {
			announceServer(s)
			if prev != nil {
				return prev(s)
			}
			return nil
		}
	}
}

// announceServer starts the batched paths of every stanza whose server block s serves.
func announceServer(s *dnsserver.Server) {
	zones, ok := serverZones(s)
	if !ok {
		log.Warningf("Batched UDP path: cannot read the zones of server %s (another CoreDNS?); it stays off there", s.Addr)
		return
	}
	var runs []*Run
	running.Lock()
	for _, cfgs := range zones {
		for _, c := range cfgs {
			if r := running.byConfig[c]; r != nil && !slices.Contains(runs, r) {
				runs = append(runs, r)
			}
		}
	}
	running.Unlock()
	for _, r := range runs {
		r.serve(s, zones)
	}
}

// shufflesOnly reports whether h is the loadbalance plugin with its default policy (round_robin,
// without prefer): a random order of the addresses of each reply, which the path gives its own
// replies (packed.Answer.Shuffle). Its policy is read by reflection, as the server's zones are:
// any other (weighted, prefer), or one that cannot be read, keeps the path off.
func shufflesOnly(h any) bool {
	v := reflect.ValueOf(h)
	if !v.IsValid() || v.Kind() != reflect.Struct {
		return false
	}
	f := v.FieldByName("shuffle")
	if !f.IsValid() || f.Kind() != reflect.Func || f.IsNil() {
		return false
	}
	fn := runtime.FuncForPC(f.Pointer())
	return fn != nil && fn.Name() == "github.com/coredns/coredns/plugin/loadbalance.randomShuffle"
}

// serverZones are the zones s serves and the configurations (by address) of each, read from
// the server by reflection: CoreDNS exports no list of them, and the path must leave a zone
// another block serves to the server.
func serverZones(s *dnsserver.Server) (map[string][]uintptr, bool) {
	v := reflect.ValueOf(s).Elem().FieldByName("zones")
	if !v.IsValid() || v.Kind() != reflect.Map || v.Type().Key().Kind() != reflect.String || v.Type().Elem().Kind() != reflect.Slice {
		return nil, false
	}
	out := map[string][]uintptr{}
	for it := v.MapRange(); it.Next(); {
		cfgs := it.Value()
		for i := range cfgs.Len() {
			out[it.Key().String()] = append(out[it.Key().String()], cfgs.Index(i).Pointer())
		}
	}
	return out, true
}

func configKey(c *dnsserver.Config) uintptr { return uintptr(unsafe.Pointer(c)) } // #nosec G103 -- compared, never dereferenced

// New decides whether the stanza st runs the batched path in its server block
// (configs, of which the first has the block's handlers), as mode asks: nil when it does not.
// at is where the option is, for the error of a block where something must see each question.
func New(st Stanza, mode Mode, at string, configs []*dnsserver.Config, blockZones []string) (*Run, error) {
	if mode == Off {
		return nil, nil
	}
	var why []string
	front := prepacked.InFront(configs[0], pluginName)
	shuffle := false
	for _, name := range front {
		switch {
		case allowed[name]:
		case name == "loadbalance" && shufflesOnly(configs[0].Handler(name)):
			shuffle = true // the path shuffles its replies of addresses as loadbalance does
		default:
			why = append(why, name)
		}
	}
	for _, c := range configs {
		if len(c.FilterFuncs) > 0 || c.ViewName != "" {
			why = append(why, "view")
		}
		if c.ProxyProtoConnPolicy != nil {
			why = append(why, "proxyproto")
		}
	}
	why = slices.Compact(why)
	if len(why) > 0 {
		if mode == On {
			return nil, fmt.Errorf("%s: udp-batch: %s in this server block must see every question; the batched UDP path would answer most of them without them (remove udp-batch, or them)", at, strings.Join(why, ", "))
		}
		log.Infof("Batched UDP path off for %s: %s must see every question", strings.Join(st.Zones, " "), strings.Join(why, ", "))
		return nil, nil
	}
	r := &Run{st: st, zones: strings.Join(st.Zones, " "), configs: configs, shuffle: shuffle, blockZones: blockZones, metrics: slices.Contains(front, "prometheus"), readers: runtime.GOMAXPROCS(0), serving: map[string]bool{}}
	r.reserve(configs)
	running.Lock()
	for _, c := range configs {
		running.byConfig[configKey(c)] = r
	}
	running.Unlock()
	return r, nil
}

// serve starts the path on server s, which serves zones, unless it runs there already or the
// stanza stopped.
func (r *Run) serve(s *dnsserver.Server, zones map[string][]uintptr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.serving[s.Addr] {
		return
	}
	key := pathKey(s.Addr, r.readers, s.TsigSecret)
	sv := r.served(s, zones)
	addrs, err := sv.bindAddrs(s.Addr)
	if err != nil || len(addrs) == 0 {
		if err != nil {
			log.Warningf("Batched UDP path off for %s: %v", s.Addr, err)
		}
		r.letGoOf(key) // another run's path there, if any, must not wait for this one
		return
	}
	serving := udpbatch.Serving{
		Answer: sv.reply,
		Count:  r.count(),
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, m *dns.Msg) {
			ctx := context.WithValue(context.Background(), dnsserver.Key{}, s)
			ctx = context.WithValue(ctx, dnsserver.LoopKey{}, 0)
			s.ServeDNS(ctx, w, m)
		}),
		Accept: acceptFor(serverOpcodes(s)),
	}
	err = r.serveOn(key, serving, func() (*udpbatch.Path, error) {
		return udpbatch.Start(udpbatch.Config{Addrs: addrs, Readers: r.readers, TsigSecret: s.TsigSecret, Serving: serving, Log: log})
	})
	if err != nil {
		log.Warningf("Batched UDP path off for %s: %v", s.Addr, err)
		r.letGoOf(key)
		return
	}
	r.serving[s.Addr] = true
	log.Infof("Batched UDP path on %s (%d readers each): %s", strings.Join(addrs, " "), r.readers, strings.Join(sv.zones, " "))
}

// count is the path's Serving.Count: the run's questions metric.
func (r *Run) count() func(a, h, d int) {
	answered, handed, dropped := questions.WithLabelValues(r.st.Server, r.zones, "answered"),
		questions.WithLabelValues(r.st.Server, r.zones, "handed_off"), questions.WithLabelValues(r.st.Server, r.zones, "dropped")
	return func(a, h, d int) {
		answered.Add(float64(a))
		handed.Add(float64(h))
		if d > 0 {
			dropped.Add(float64(d))
		}
	}
}

// acceptFor is the server's acceptance of a request's header (dnsserver.Server's
// acceptMessage): miekg/dns's, and the opcodes the server's plugins asked for
// (dnsserver.Config.AllowOpcode) with one question.
func acceptFor(opcodes map[int]bool) dns.MsgAcceptFunc {
	return func(h dns.Header) dns.MsgAcceptAction {
		action := dns.DefaultMsgAcceptFunc(h)
		if action != dns.MsgRejectNotImplemented || !opcodes[int(h.Bits>>11)&0xF] {
			return action
		}
		if h.Qdcount != 1 {
			return dns.MsgReject
		}
		return dns.MsgAccept
	}
}

// serverOpcodes are the opcodes the server's plugins asked for, read by reflection as its
// zones are; none when they cannot be read.
func serverOpcodes(s *dnsserver.Server) map[int]bool {
	out := map[int]bool{}
	v := reflect.ValueOf(s).Elem().FieldByName("allowedOpcodes")
	if !v.IsValid() || v.Kind() != reflect.Map || v.Type().Key().Kind() != reflect.Int {
		log.Warningf("Batched UDP path: cannot read the opcodes server %s takes; others than QUERY and NOTIFY get NOTIMP", s.Addr)
		return out
	}
	for _, k := range v.MapKeys() {
		out[int(k.Int())] = true
	}
	return out
}

// Stop lets go of the paths, stopping those no other run holds (each wait bounded), and
// forgets the run.
func (r *Run) Stop() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	running.Lock()
	for _, c := range r.configs {
		if running.byConfig[configKey(c)] == r {
			delete(running.byConfig, configKey(c))
		}
	}
	running.Unlock()
	return r.letGo()
}

// bindAddrs are the addresses the path binds on the server of addr, if it answers there: none
// when it serves no zone of its own there, and none that another process listens on.
func (sv *server) bindAddrs(addr string) ([]string, error) {
	if len(sv.zones) == 0 {
		return nil, nil
	}
	addrs, err := bindAddrs(addr)
	if err != nil {
		return nil, err
	}
	if taken := udpbatch.Taken(addrs); len(taken) > 0 {
		log.Infof("Batched UDP path leaves %s to the other process listening there", strings.Join(taken, " "))
		addrs = slices.DeleteFunc(addrs, func(a string) bool { return slices.Contains(taken, a) })
	}
	return addrs, nil
}

// bindAddrs are the addresses the path binds for the server address addr ("dns://host:port"):
// the host, or for the wildcard every unicast address of the machine's interfaces but IPv6
// link-local ones (which need a zone; the server's own socket answers them).
func bindAddrs(addr string) ([]string, error) {
	hostPort, ok := strings.CutPrefix(addr, "dns://")
	if !ok {
		return nil, fmt.Errorf("not a plain DNS server")
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return nil, err
	}
	if host != "" {
		return []string{net.JoinHostPort(host, port)}, nil
	}
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range ifaddrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLinkLocalUnicast() || n.IP.IsMulticast() || n.IP.IsUnspecified() {
			continue
		}
		out = append(out, net.JoinHostPort(n.IP.String(), port))
	}
	return out, nil
}
