package gatewaydns

import (
	"context"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/upstream"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/history"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
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
}

func newBackend(ix *index.Index, h *history.Reader) *backend {
	return &backend{Index: ix, upstream: upstream.New(), history: h}
}

// History implements xfr.Records.
func (b *backend) History() xfr.History {
	if b.history == nil {
		return nil
	}
	return b.history
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
