// Package gatewaydns is the CoreDNS face of gatewaydns: it answers a zone from SkyDNS records
// in etcd, held in memory and kept current by an etcd watch, so that no query waits on etcd.
package gatewaydns

import (
	"context"
	"errors"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/coredns/coredns/plugin/pkg/upstream"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
)

const pluginName = "gatewaydns"

// errNotLoaded answers SERVFAIL until the first full load: before it, "no such name" would be
// a lie that resolvers cache.
var errNotLoaded = errors.New("records not loaded from etcd yet")

// GatewayDNS is the handler of one gatewaydns stanza.
type GatewayDNS struct {
	Next           plugin.Handler
	Zones          []string
	Fall           fall.F
	NoApexFallback bool
	Explain        bool // answer CHAOS TXT questions with where each record came from

	stanza *stanza // the roles behind the handler
	apex   *apex   // the SOA's fields and the nameservers; nil for the stock ones
	packer *packer // the packed replies (prepacked.go); nil: none
}

// backend is the index with upstream lookups added: the plugin.ServiceBackend that CoreDNS's
// plugin.A, plugin.SRV, ... build answers from.
type backend struct {
	*index.Index
	upstream *upstream.Upstream
	// only, when set, are the zones the backend answers: a bridge from a configuration that
	// served some of the stanza's zones. The others answer SERVFAIL, as before a load.
	only map[string]bool
}

// serves reports whether b answers zone.
func (b *backend) serves(zone string) bool { return b.only == nil || b.only[zone] }

// Lookup implements plugin.ServiceBackend: names outside the zone are resolved through the
// server's own plugin chain, so a forward after this plugin resolves external CNAME targets.
func (b *backend) Lookup(ctx context.Context, state request.Request, name string, typ uint16) (*dns.Msg, error) {
	return b.upstream.Lookup(ctx, state, name, typ)
}

// Name implements plugin.Handler.
func (g *GatewayDNS) Name() string { return pluginName }

// Ready implements ready.Readiness: ready once the first full load from etcd is in memory and,
// when the stanza publishes, the Kubernetes caches have synced.
func (g *GatewayDNS) Ready() bool { return g.stanza.ready() }

// current is the backend to answer from now, nil when the stanza only publishes.
func (g *GatewayDNS) current() *backend {
	if g.stanza.cfg.publishOnly {
		return nil
	}
	return g.stanza.serving.Load()
}

// ServeDNS implements plugin.Handler.
func (g *GatewayDNS) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	state := request.Request{W: w, Req: r}
	zone := matchZone(g.Zones, state.Name())
	b := g.current()
	if zone == "" || b == nil {
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	if state.QType() != dns.TypeSOA {
		// A secondary asks for the SOA right before the transfer that a NOTIFY starts: counted
		// as a query, it would pace that very transfer (transfer.go), and a secondary on a quiet
		// primary would follow a change hundreds of milliseconds late.
		queried()
	}
	if !b.Loaded() || !b.serves(zone) {
		return dns.RcodeServerFailure, errNotLoaded
	}
	var pq packedQuestion
	if g.servePacked(w, &state, zone, b, &pq) {
		return dns.RcodeSuccess, nil
	}
	return g.serveLookup(ctx, w, &state, zone, b, &pq)
}

// serveLookup answers the question of state by lookup, and keeps its reply packed (pq) where it
// can. It is ServeDNS's second half, in a frame of its own: a question answered packed never
// has it on its stack, and one that is not has ServeDNS's small one beneath it, so that the
// goroutine's stack holds the lookup without growing (issue 37).
func (g *GatewayDNS) serveLookup(ctx context.Context, w dns.ResponseWriter, state *request.Request, zone string, b *backend, pq *packedQuestion) (int, error) {
	if state.QClass() != dns.ClassINET {
		if g.Explain && state.QClass() == dns.ClassCHAOS && state.QType() == dns.TypeTXT {
			return g.explain(ctx, b, zone, *state)
		}
		return dns.RcodeRefused, nil
	}

	opt := plugin.Options{NoApexFallback: g.NoApexFallback}
	records, extra, truncated, err := lookup(ctx, b, g.apexOf(), zone, *state, opt)
	if err != nil && b.IsNameError(err) {
		if g.Fall.Through(state.Name()) {
			return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, state.Req)
		}
		return g.backendError(b, zone, dns.RcodeNameError, *state, nil)
	}
	if err != nil {
		return g.backendError(b, zone, dns.RcodeServerFailure, *state, err)
	}
	if len(records) == 0 {
		g.keepPacked(b, pq, nil, dns.RcodeSuccess)
		return g.backendError(b, zone, dns.RcodeSuccess, *state, nil)
	}

	m := new(dns.Msg)
	m.SetReply(state.Req)
	m.Truncated = truncated
	m.Authoritative = true
	m.Answer = records
	m.Extra = extra
	g.keepPacked(b, pq, m, dns.RcodeSuccess)
	w.WriteMsg(m)
	return dns.RcodeSuccess, nil
}

// lookup finds the records that answer the question, as the stock etcd plugin finds them, with
// the SOA and NS records of the stanza's apex (apex.go). b is the live backend, or a zone being
// transferred (transfer.go).
func lookup(ctx context.Context, b plugin.ServiceBackend, a *apex, zone string, state request.Request, opt plugin.Options) (records, extra []dns.RR, truncated bool, err error) {
	qtype := state.QType()
	if glue := a.glue(state.Name(), qtype); len(glue) > 0 {
		// A nameserver's glue, beside the addresses the name has in etcd: what a secondary
		// holds. Not beside a CNAME, nor what it leads to (apex.glued).
		records, extra, truncated, err = lookupBackend(ctx, b, a, zone, state, opt)
		if err != nil && !b.IsNameError(err) {
			return nil, nil, false, err
		}
		own := glue
		for _, rr := range records {
			if h := rr.Header(); h.Rrtype == qtype && h.Name == state.QName() {
				own = append(own, rr)
			}
		}
		return own, extra, truncated, nil
	}
	return lookupBackend(ctx, b, a, zone, state, opt)
}

// lookupBackend is lookup without the nameservers' glue.
func lookupBackend(ctx context.Context, b plugin.ServiceBackend, a *apex, zone string, state request.Request, opt plugin.Options) (records, extra []dns.RR, truncated bool, err error) {
	switch qtype := state.QType(); qtype {
	case dns.TypeA, dns.TypeAAAA:
		if live, ok := b.(*backend); ok && state.Name() != zone {
			if records, ok, err := addressRecords(live.Index, state, qtype); ok {
				return records, nil, false, err
			}
		}
		if qtype == dns.TypeAAAA {
			records, truncated, err = plugin.AAAA(ctx, b, zone, state, nil, opt)
			break
		}
		records, truncated, err = plugin.A(ctx, b, zone, state, nil, opt)
	case dns.TypeTXT:
		records, truncated, err = plugin.TXT(ctx, b, zone, state, nil, opt)
	case dns.TypeCNAME:
		records, err = cname(ctx, b, zone, state, opt)
	case dns.TypePTR:
		records, err = plugin.PTR(ctx, b, zone, state, opt)
	case dns.TypeMX:
		records, extra, err = plugin.MX(ctx, b, zone, state, opt)
	case dns.TypeSRV:
		records, extra, err = plugin.SRV(ctx, b, zone, state, opt)
	case dns.TypeSOA:
		// The etcd plugin answers the zone's SOA to an SOA question for any name; a plain zone
		// only at its apex, and NODATA or NXDOMAIN below it, as exact names do.
		if live, ok := b.(*backend); !ok || !live.ExactNames() || state.Name() == zone {
			records = []dns.RR{a.soa(b, zone, state)}
			break
		}
		_, _, err = plugin.A(ctx, b, zone, state, nil, opt)
	case dns.TypeNS:
		if state.Name() == zone {
			records, extra, err = a.ns(ctx, b, zone, state, opt)
			break
		}
		fallthrough
	default:
		// An A lookup tells NODATA from NXDOMAIN for the types we hold no data of.
		_, _, err = plugin.A(ctx, b, zone, state, nil, opt)
	}
	return records, extra, truncated, err
}

// addressRecords is plugin.A's or plugin.AAAA's answer for names whose records are addresses
// alone, from what the index worked out when the records last changed rather than per question:
// the bulk of the questions, at a fraction of the cost. ok is false for the other names.
func addressRecords(ix *index.Index, state request.Request, qtype uint16) (records []dns.RR, ok bool, err error) {
	// Most names have fewer: then finding them allocates nothing. More would make the query
	// path's frames grow the goroutine's stack once more per question (issue 37).
	var buf [4]index.Address
	addrs, ok, err := ix.AppendAddresses(buf[:0], state.Name(), qtype)
	if !ok || err != nil {
		return nil, ok, err
	}
	return appendAddressRecords(make([]dns.RR, 0, len(addrs)), state.QName(), qtype, addrs), true, nil
}

// appendAddressRecords appends the A (qtype A) or AAAA records of name for addrs: how both
// answers (addressRecords) and zone transfers (transfer.go) make them.
func appendAddressRecords(dst []dns.RR, name string, qtype uint16, addrs []index.Address) []dns.RR {
	hdr := dns.RR_Header{Name: name, Rrtype: qtype, Class: dns.ClassINET}
	for _, a := range addrs {
		hdr.Ttl = a.TTL
		if qtype == dns.TypeA {
			dst = append(dst, &dns.A{Hdr: hdr, A: a.IP})
		} else {
			dst = append(dst, &dns.AAAA{Hdr: hdr, AAAA: a.IP})
		}
	}
	return dst
}

// matchZone is plugin.Zones(zones).Matches(name) for a lower-cased name, without its
// allocations on every query: for names and zones without escapes, a zone is a suffix of the
// name that starts at a label.
func matchZone(zones []string, name string) string {
	if strings.IndexByte(name, '\\') >= 0 {
		return plugin.Zones(zones).Matches(name)
	}
	zone := ""
	for _, z := range zones {
		if strings.IndexByte(z, '\\') >= 0 {
			return plugin.Zones(zones).Matches(name)
		}
		if len(z) <= len(zone) {
			continue
		}
		if z == "." || name == z || (strings.HasSuffix(name, z) && name[len(name)-len(z)-1] == '.') {
			zone = z
		}
	}
	return zone
}

// cname answers a CNAME question. A record at the name's own key answers as in the stock
// plugin. Records one level down (".../app/3e6bee2e", the layout external-dns and gatewaydns
// write) give the CNAMEs that an A question for the name returns, where the stock plugin says
// NXDOMAIN although it answers the A question with that very CNAME.
func cname(ctx context.Context, b plugin.ServiceBackend, zone string, state request.Request, opt plugin.Options) ([]dns.RR, error) {
	records, err := plugin.CNAME(ctx, b, zone, state, opt)
	if err == nil || !b.IsNameError(err) {
		return records, err
	}
	services, err := b.Services(ctx, state, false, opt)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, s := range services {
		if what, _ := s.HostType(); what != dns.TypeCNAME {
			continue
		}
		target := dns.Fqdn(s.Host)
		if plugin.Name(state.Name()).Matches(target) || seen[target] {
			continue // a loop, as plugin.A skips it; or a target already given
		}
		seen[target] = true
		records = append(records, s.NewCNAME(state.QName(), target))
	}
	return records, nil
}

var _ plugin.ServiceBackend = (*backend)(nil)
