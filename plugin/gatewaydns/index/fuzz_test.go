package index

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/queryfuzz"
)

// fuzzBackend is the index as a plugin.ServiceBackend without upstream: names outside the
// zone resolve to nothing, as they would with no plugin after gatewaydns.
type fuzzBackend struct{ *Index }

func (fuzzBackend) Lookup(context.Context, request.Request, string, uint16) (*dns.Msg, error) {
	return nil, nil
}

var _ plugin.ServiceBackend = fuzzBackend{}

// FuzzQuery loads the fixed zone plus fuzzed keys (once in the full load, once as a watch
// change, and a delete; queryfuzz.Input) and asks for a fuzzed name: Records and Services
// fail with nothing but a name error or a read too broad, and return keys under the root only;
// a read that stops at two records finds the whole read's first two; Addresses, where it
// answers, says what plugin.A and plugin.AAAA say. The replies the handler builds from these
// reads are fuzzed where the handler is: FuzzAnswer in plugin/gatewaydns.
func FuzzQuery(f *testing.F) {
	queryfuzz.Fuzz(f, func(t *testing.T, in queryfuzz.Input, q *dns.Msg, zone string) {
		// The index as served, and one whose reads stop at two records (walk.go).
		var indexes [2]*Index
		for i, limit := range []int{0, 2} {
			indexes[i] = New(Options{MaxRecords: limit})
			in.Fill(indexes[i])
		}
		state := request.Request{W: nil, Req: q}
		sameFirstRecords(t, indexes[0], indexes[1], state.Name())
		for _, ix := range indexes {
			readsStayInTheIndex(t, ix, state)
			if qt := state.QType(); (qt == dns.TypeA || qt == dns.TypeAAAA) && state.Name() != zone {
				sameAddresses(t, ix, zone, state)
			}
		}
	})
}

// sameFirstRecords fails t unless every read of small, whose reads stop at fewer records than
// ix's, finds the first records that ix's finds, and says whether there are more.
func sameFirstRecords(t *testing.T, ix, small *Index, name string) {
	t.Helper()
	for _, exact := range []bool{false, true} {
		all, _, errAll := ix.records(name, dns.TypeTXT, exact, everything, nil)
		first, cut, err := small.records(name, dns.TypeTXT, exact, everything, nil)
		if errors.Is(err, ErrTooBroad) {
			continue // a query wildcard that found nothing within its budget
		}
		if (err == nil) != (errAll == nil) {
			t.Fatalf("Records(%q, exact=%v): error %v where the whole read says %v", name, exact, err, errAll)
		}
		got, whole := keys(first), keys(all)
		limit := small.opts.MaxRecords
		want, wantCut := whole, len(whole) > limit
		if wantCut {
			want = whole[:limit]
		}
		if _, star := small.labels(nil, name); star >= 0 && cut && len(got) < limit {
			want = whole[:min(len(got), len(whole))] // the walk ran out of budget
			wantCut = true
		}
		if !slices.Equal(got, want) || cut != wantCut {
			t.Fatalf("Records(%q, exact=%v): %q, cut %v; the whole read is %q", name, exact, got, cut, whole)
		}
	}
}

// readsStayInTheIndex fails t unless Records (whole names and subtrees) and Services of ix for
// the question fail with nothing but a name error or a read too broad, and Records returns
// keys under the root only.
func readsStayInTheIndex(t *testing.T, ix *Index, state request.Request) {
	t.Helper()
	ctx := context.Background()
	for _, exact := range []bool{false, true} {
		sx, err := ix.Records(ctx, state, exact)
		if err != nil && !ix.IsNameError(err) && !errors.Is(err, ErrTooBroad) {
			t.Fatalf("Records(%q, exact=%v): unexpected error %v", state.Name(), exact, err)
		}
		for _, s := range sx {
			if !strings.HasPrefix(s.Key, ix.Root()) {
				t.Fatalf("Records(%q) returned key %q outside %s", state.Name(), s.Key, ix.Root())
			}
		}
	}
	if _, err := ix.Services(ctx, state, false, plugin.Options{}); err != nil && !ix.IsNameError(err) && !errors.Is(err, ErrTooBroad) {
		t.Fatalf("Services(%q): %v", state.Name(), err)
	}
}

// sameAddresses fails t unless Addresses, where it answers an A or AAAA question, says what
// plugin.A or plugin.AAAA says from ix: the same error, the same addresses in the same order,
// the same TTLs. The handler answers from Addresses where it can (addressRecords).
func sameAddresses(t *testing.T, ix *Index, zone string, state request.Request) {
	t.Helper()
	addrs, ok, err := ix.Addresses(state.Name(), state.QType())
	if !ok {
		return
	}
	lookup := plugin.A
	if state.QType() == dns.TypeAAAA {
		lookup = plugin.AAAA
	}
	records, _, lookupErr := lookup(context.Background(), fuzzBackend{ix}, zone, state, nil, plugin.Options{})
	if (err == nil) != (lookupErr == nil) {
		t.Fatalf("%s %s: Addresses error %v, plugin.A's %v", state.Name(), dns.TypeToString[state.QType()], err, lookupErr)
	}
	same := len(addrs) == len(records)
	for i := 0; same && i < len(addrs); i++ {
		var ip net.IP
		switch rr := records[i].(type) {
		case *dns.A:
			ip = rr.A
		case *dns.AAAA:
			ip = rr.AAAA
		}
		same = ip.Equal(addrs[i].IP) && records[i].Header().Ttl == addrs[i].TTL
	}
	if !same {
		t.Fatalf("%s %s: Addresses %v, plugin.A's records %v", state.Name(), dns.TypeToString[state.QType()], addrs, records)
	}
}
