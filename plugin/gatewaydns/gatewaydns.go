// Package gatewaydns is the CoreDNS face of gatewaydns, shaped like CoreDNS's etcd plugin: the
// setup of a stanza (setup.go: one option table per role), its lifecycle across reloads
// (stanza.go, feed.go, lifecycle.go), the handler (this file, explain.go), the hand-over of
// zone transfers (xfr.go) and the serve role's metrics. A stanza serves a zone from SkyDNS
// records in etcd, held in memory and kept current by an etcd watch, so that no query waits on
// etcd; it may publish a cluster's names to etcd too (package publish), and sends its zones to
// secondaries (package xfr). The rules of an answer are package answer's.
package gatewaydns

import (
	"context"
	"math/rand/v2"
	"net"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/packed"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/prepacked"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/xfr"
)

// GatewayDNS is the handler of one gatewaydns stanza.
type GatewayDNS struct {
	Next           plugin.Handler
	Zones          []string
	Fall           fall.F
	NoApexFallback bool
	Explain        bool // answer CHAOS TXT questions with where each record came from

	stanza *stanza           // the roles behind the handler
	apex   *answer.Apex      // the SOA's fields and the nameservers; nil for the stock ones
	packer *prepacked.Packer // the packed replies; nil: none
}

// newHandler is the handler of the stanza st, configured by cfg.
func newHandler(cfg *config, st *stanza) *GatewayDNS {
	g := &GatewayDNS{Zones: cfg.zones, NoApexFallback: cfg.noApexFallback, Explain: cfg.explain, stanza: st, apex: cfg.apex}
	if cfg.fall != nil {
		g.Fall.SetZonesFromArgs(cfg.fall)
	}
	if !cfg.publishOnly {
		g.packer = prepacked.New(cfg.prefix, cfg.zones, g.packedRules(&cfg.steering))
	}
	return g
}

// Name implements plugin.Handler.
func (g *GatewayDNS) Name() string { return pluginName }

// Ready implements ready.Readiness: ready once the first full load from etcd is in memory and,
// when the stanza publishes, the Kubernetes caches have synced.
func (g *GatewayDNS) Ready() bool { return g.stanza.ready() }

// ServeDNS implements plugin.Handler.
func (g *GatewayDNS) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	state := request.Request{W: w, Req: r}
	if c := g.stanza.catalog; c != nil && c.Holds(state.Name()) {
		if _, cw, ok := answer.ClientSubnet(ctx, w, r, nil); ok {
			cw.WriteMsg(c.Reply(r))
			return dns.RcodeSuccess, nil
		}
		return dns.RcodeFormatError, nil
	}
	zone := answer.MatchZone(g.Zones, state.Name())
	b := g.stanza.answering()
	if zone == "" || b == nil {
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	if state.QType() != dns.TypeSOA {
		xfr.Queried() // the query clock that transfers give way to (not SOA: see Queried)
	}
	if !b.Loaded() || !b.Serves(zone) {
		return dns.RcodeServerFailure, index.ErrNotLoaded
	}
	var pq prepacked.Question
	if g.packer.Serve(w, &state, zone, b.Index, &pq) {
		return dns.RcodeSuccess, nil
	}
	if draw, ok := pq.Draw(); ok {
		ctx = index.WithDraw(ctx, draw) // the lookup chooses as the probe did: its reply is the variant's
	}
	return g.serveLookup(ctx, w, &state, zone, b, &pq)
}

// serveLookup answers the question of state by lookup, and keeps its reply packed (pq) where it
// can. It is ServeDNS's second half, in a frame of its own: a question answered packed never
// has it on its stack, and one that is not has ServeDNS's small one beneath it, so that the
// goroutine's stack holds the lookup without growing (issue 37).
func (g *GatewayDNS) serveLookup(ctx context.Context, w dns.ResponseWriter, state *request.Request, zone string, b *backend, pq *prepacked.Question) (int, error) {
	next := w // the next plugin gets the question as it came
	ctx, w, ok := answer.ClientSubnet(ctx, w, state.Req, b.locality)
	if !ok {
		return dns.RcodeFormatError, nil
	}
	if w != next {
		state = &request.Request{W: w, Req: state.Req}
	}
	if state.QClass() != dns.ClassINET {
		if g.Explain && state.QClass() == dns.ClassCHAOS && state.QType() == dns.TypeTXT {
			return answer.Explain(ctx, b, g.apexOf(), zone, *state, b.asker(ctx, *state))
		}
		return dns.RcodeRefused, nil
	}

	opt := plugin.Options{NoApexFallback: g.NoApexFallback}
	records, extra, truncated, err := answer.Lookup(ctx, b, g.apexOf(), zone, *state, opt)
	if err != nil && b.IsNameError(err) {
		if g.Fall.Through(state.Name()) {
			return plugin.NextOrFailure(g.Name(), g.Next, ctx, next, state.Req)
		}
		return answer.BackendError(b, g.apexOf(), zone, dns.RcodeNameError, *state, nil)
	}
	if err != nil {
		return answer.BackendError(b, g.apexOf(), zone, dns.RcodeServerFailure, *state, err)
	}
	if len(records) == 0 {
		g.packer.Keep(b.Index, pq, nil, dns.RcodeSuccess)
		return answer.BackendError(b, g.apexOf(), zone, dns.RcodeSuccess, *state, nil)
	}

	m := new(dns.Msg)
	m.SetReply(state.Req)
	m.Truncated = truncated
	m.Authoritative = true
	m.Answer = records
	m.Extra = extra
	g.packer.Keep(b.Index, pq, m, dns.RcodeSuccess)
	w.WriteMsg(m)
	return dns.RcodeSuccess, nil
}

// apexOf is the stanza's apex, the stock one for a handler built without a stanza's config.
func (g *GatewayDNS) apexOf() *answer.Apex {
	if g.apex == nil {
		return answer.NewApex()
	}
	return g.apex
}

// packedRules are the handler's rules its packed replies follow, read as they are when asked:
// tests set a handler's apex and fallthrough after building it. s places the stanza's clients
// and counts the answers of its steering-metrics.
func (g *GatewayDNS) packedRules(s *steering) prepacked.Rules {
	if s == nil {
		s = &steering{}
	}
	return prepacked.Rules{Apex: g.apexOf, FallThrough: func(name string) bool { return g.Fall.Through(name) }, Locality: s.loc, Tally: s.tally}
}

// appendBatched is the batched UDP path's answer (batchrun.Stanza.Answer): the packed reply
// of the stanza's current records, when they are loaded for zone.
func (g *GatewayDNS) appendBatched(dst []byte, q *packed.Query, name, zone string, from net.Addr, shuffle bool) ([]byte, bool, bool) {
	b := g.stanza.answering()
	if b == nil || !b.Loaded() || !b.Serves(zone) {
		return dst, false, false
	}
	out, nx, ok := g.packer.AppendBatched(dst, q, name, zone, b.Index, from, shuffle, rand.Uint32)
	if ok {
		xfr.Queried()
	}
	return out, nx, ok
}
