package gatewaydns

import (
	"context"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/plugin/pkg/upstream"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/history"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/steer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/xfr"
)

// backend is the index with upstream lookups added: the plugin.ServiceBackend that CoreDNS's
// plugin.A, plugin.SRV, ... build answers from, and the records the stanza's transfers read.
type backend struct {
	*index.Index
	upstream *upstream.Upstream
	history  *history.Reader // the feed's etcd's, for IXFRs from before the journal; nil: none
	// only, when set, are the zones the backend answers: a bridge from a configuration that
	// served some of the stanza's zones. The others answer SERVFAIL, as before a load.
	only map[string]bool
	// locality places the clients of the stanza's questions for steered names (the index
	// may be shared with a stanza of other options: a reload's); nil places no one. tally
	// counts the answers of the names of its steering-metrics; nil: none.
	locality *steer.Locality
	tally    *steer.Tally
}

// newBackend is ix's backend for a stanza of the steering options s (nil: none).
func newBackend(ix *index.Index, h *history.Reader, s *steering) *backend {
	b := &backend{Index: ix, upstream: upstream.New(), history: h}
	if s != nil {
		b.locality, b.tally = s.loc, s.tally
	}
	return b
}

// History implements xfr.Records.
func (b *backend) History() xfr.History {
	if b.history == nil {
		return nil
	}
	return b.history
}

// asker is who asks the question of state, as steering places them, with the draw
// (index.WithDraw) and the client subnet option (steer.WithSubnet) ctx carries.
func (b *backend) asker(ctx context.Context, state request.Request) index.Asker {
	a := index.Asker{Locality: b.locality, W: state.W, Req: state.Req, Subnet: steer.SubnetFrom(ctx), Tally: b.tally}
	a.Draw, a.Drawn = index.DrawOf(ctx)
	return a
}

// Services implements plugin.ServiceBackend: a steered name gives the records of the owners
// chosen for the asker.
func (b *backend) Services(ctx context.Context, state request.Request, exact bool, _ plugin.Options) ([]msg.Service, error) {
	return b.ServicesAsked(state, exact, b.asker(ctx, state))
}

// Records implements plugin.ServiceBackend, as Services.
func (b *backend) Records(ctx context.Context, state request.Request, exact bool) ([]msg.Service, error) {
	return b.RecordsAsked(state, exact, b.asker(ctx, state))
}

// Reverse implements plugin.ServiceBackend.
func (b *backend) Reverse(ctx context.Context, state request.Request, exact bool, opt plugin.Options) ([]msg.Service, error) {
	return b.Services(ctx, state, exact, opt)
}

// AppendAsked implements answer.Indexed for the stanza's clients.
func (b *backend) AppendAsked(ctx context.Context, dst []index.Address, state request.Request, qtype uint16) ([]index.Address, bool, error) {
	return b.AppendAnswer(dst, state.Name(), qtype, b.asker(ctx, state))
}

// Serves reports whether b answers zone.
func (b *backend) Serves(zone string) bool { return b.only == nil || b.only[zone] }

// Lookup implements plugin.ServiceBackend: names outside the zone are resolved through the
// server's own plugin chain, so a forward after this plugin resolves external CNAME targets.
func (b *backend) Lookup(ctx context.Context, state request.Request, name string, typ uint16) (*dns.Msg, error) {
	return b.upstream.Lookup(ctx, state, name, typ)
}

var (
	_ plugin.ServiceBackend = (*backend)(nil)
	_ answer.Indexed        = (*backend)(nil)
	_ xfr.Records           = (*backend)(nil)
)
