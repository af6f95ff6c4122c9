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
// else the apex's key's, as plugin.A reads them; for the other types both. apex.dns.<zone> is
// read as the stock plugin reads it, as a subtree (Storage).
func ApexServices(ctx context.Context, b plugin.ServiceBackend, zone string, state request.Request, opt plugin.Options) ([]msg.Service, error) {
	stored, err := Storage(ctx, b, state.NewWithQuestion(dnsutil.Join("apex.dns", zone), state.QType()), opt)
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

// Storage is the services of a directory the apex's records are kept in (ns.dns.<zone>,
// apex.dns.<zone>), read as the stock plugin reads it: its key and every key below it, at any
// depth (index.Index.Subtree, index.Zone.Subtree), where b has exact names too.
func Storage(ctx context.Context, b plugin.ServiceBackend, state request.Request, opt plugin.Options) ([]msg.Service, error) {
	if s, ok := b.(subtreeReader); ok {
		return s.Subtree(ctx, state)
	}
	return b.Services(ctx, state, false, opt)
}

// subtreeReader is a backend that reads a name's subtree whatever its own reading of names.
type subtreeReader interface {
	Subtree(ctx context.Context, state request.Request) ([]msg.Service, error)
}

// apexRecords is a backend with exact names whose apex answers with ApexServices, and whose
// apex.dns.<zone> is read as a subtree: plugin.A, plugin.TXT, plugin.MX and plugin.SRV then
// make the apex's answers as the transfer makes its records.
type apexRecords struct {
	plugin.ServiceBackend
	zone string
}

// Services implements plugin.ServiceBackend.
func (a apexRecords) Services(ctx context.Context, state request.Request, exact bool, opt plugin.Options) ([]msg.Service, error) {
	switch name := state.Name(); {
	case exact:
	case name == dnsutil.Join("apex.dns", a.zone):
		return Storage(ctx, a.ServiceBackend, state, opt)
	case name == a.zone && state.QType() != dns.TypeA && state.QType() != dns.TypeAAAA:
		return ApexServices(ctx, a.ServiceBackend, a.zone, state, opt)
	}
	return a.ServiceBackend.Services(ctx, state, exact, opt)
}

// exactApex tells whether a question for the apex of zone is answered from apexRecords: b
// holds exact names (a zone being transferred, or an index with exact names).
func exactApex(b plugin.ServiceBackend, zone string, state request.Request) bool {
	if state.Name() != zone {
		return false
	}
	live, ok := b.(Indexed)
	return !ok || live.ExactNames()
}

// Subtree reads a directory of the apex the way Storage does, through the backend wrapped.
func (a apexRecords) Subtree(ctx context.Context, state request.Request) ([]msg.Service, error) {
	return Storage(ctx, a.ServiceBackend, state, plugin.Options{})
}
