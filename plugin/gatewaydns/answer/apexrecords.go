package answer

import (
	"context"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/plugin/pkg/dnsutil"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
)

// The apex's own records. SkyDNS keeps them below apex.dns.<zone> (as it keeps the NS records
// below ns.dns.<zone>), or at the apex's own key. The stock plugin reads the apex's addresses
// from apex.dns.<zone>, and from the apex's key only where that holds none (checkForApex in
// plugin.A); its TXT, MX and SRV answers read the apex's key as a subtree, which holds every
// record of the zone, apex.dns.<zone>'s among them. A name with exact names holds its own
// records alone (index/names.go), and so does a zone transfer: there the apex's records of
// every other type are those of apex.dns.<zone> and of the apex's key together, so that an MX
// of a mail domain's apex is answered, and transferred, as it was published.

// ApexServices are the services that hold the apex's records of the question's type (state's
// name is zone's apex) in a backend with exact names: for A and AAAA those of apex.dns.<zone>,
// else the apex's key's, as plugin.A reads them; for the other types both.
func ApexServices(ctx context.Context, b plugin.ServiceBackend, zone string, state request.Request, opt plugin.Options) ([]msg.Service, error) {
	dir := state.NewWithQuestion(dnsutil.Join("apex.dns", zone), state.QType())
	stored, err := b.Services(ctx, dir, false, opt)
	if err != nil && !b.IsNameError(err) {
		return nil, err
	}
	if qtype := state.QType(); err == nil && (qtype == dns.TypeA || qtype == dns.TypeAAAA) {
		return stored, nil
	}
	own, err := b.Services(ctx, state, false, opt)
	if err != nil {
		if b.IsNameError(err) && len(stored) > 0 {
			return stored, nil
		}
		return nil, err
	}
	return append(stored, own...), nil
}

// apexRecords is a backend with exact names whose apex answers TXT, MX and SRV questions with
// ApexServices, so that plugin.TXT, plugin.MX and plugin.SRV make the apex's answers of them.
type apexRecords struct {
	plugin.ServiceBackend
	zone string
}

// Services implements plugin.ServiceBackend.
func (a apexRecords) Services(ctx context.Context, state request.Request, exact bool, opt plugin.Options) ([]msg.Service, error) {
	if exact || state.Name() != a.zone {
		return a.ServiceBackend.Services(ctx, state, exact, opt)
	}
	return ApexServices(ctx, a.ServiceBackend, a.zone, state, opt)
}

// exactApex tells whether a question for the apex of zone, of type qtype, is answered from
// apexRecords: b holds exact names (a zone being transferred, or an index with exact names)
// and the type is one that plugin.A's apex reading does not cover.
func exactApex(b plugin.ServiceBackend, zone string, state request.Request, qtype uint16) bool {
	if state.Name() != zone || (qtype != dns.TypeTXT && qtype != dns.TypeMX && qtype != dns.TypeSRV) {
		return false
	}
	live, ok := b.(Indexed)
	return !ok || live.ExactNames()
}
