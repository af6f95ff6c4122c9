package answer

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// The short way for address-only names must answer exactly what plugin.A and plugin.AAAA
// answer from the same index: same records, same order, same TTLs, same name errors.
func TestAddressRecordsAreWhatPluginAAnswers(t *testing.T) {
	ix := index.New(index.Options{Prefixes: []string{"/skydns/test/zone/"}})
	kvs := []record.KV{
		{Key: "/skydns/test/zone/app/1", Value: []byte(`{"host":"10.0.0.1","ttl":60}`)},
		{Key: "/skydns/test/zone/app/2", Value: []byte(`{"host":"10.0.0.2","ttl":70}`)},
		{Key: "/skydns/test/zone/app/3", Value: []byte(`{"host":"10.0.0.1","ttl":80}`)},
		{Key: "/skydns/test/zone/app/4", Value: []byte(`{"host":"2001:db8::1"}`)},
		{Key: "/skydns/test/zone/app/5", Value: []byte(`{"host":"2001:DB8::1"}`)},
		{Key: "/skydns/test/zone/app/6", Value: []byte(`{"text":"only text"}`)},
		{Key: "/skydns/test/zone/own", Value: []byte(`{"host":"10.0.1.1"}`)},
		{Key: "/skydns/test/zone/own/below/x", Value: []byte(`{"host":"10.0.1.2"}`)},
		{Key: "/skydns/test/zone/grp/a/1", Value: []byte(`{"host":"10.0.2.1","group":"g1"}`)},
		{Key: "/skydns/test/zone/grp/b/1", Value: []byte(`{"host":"10.0.2.2","group":"g2"}`)},
		{Key: "/skydns/test/zone/grp/1", Value: []byte(`{"host":"10.0.2.3","group":"g1"}`)},
		{Key: "/skydns/test/zone/wild/*/1", Value: []byte(`{"host":"10.0.3.1"}`)},
		{Key: "/skydns/test/zone/alias/1", Value: []byte(`{"host":"app.zone.test"}`)},
		{Key: "/skydns/test/zone/ext/1", Value: []byte(`{"host":"10.0.4.1"}`)},
		{Key: "/skydns/test/zone/ext/2", Value: []byte(`{"host":"ext.zone.test"}`)},
		{Key: "/skydns/test/zone/v6only/1", Value: []byte(`{"host":"fd00::5","ttl":5}`)},
	}
	ix.Load("/skydns/test/zone/", kvs)
	b := liveIndex{ix}
	names := []string{
		"app.zone.test.", "APP.Zone.Test.", "own.zone.test.", "below.own.zone.test.", "grp.zone.test.",
		"a.grp.zone.test.", "x.wild.zone.test.", "y.x.wild.zone.test.", "wild.zone.test.", "alias.zone.test.",
		"ext.zone.test.", "v6only.zone.test.", "nope.zone.test.", "x.nope.zone.test.", "zone.test.", "test.",
		"*.zone.test.", "any.grp.zone.test.",
	}
	ctx := context.Background()
	short := 0
	for _, name := range names {
		for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
			req := new(dns.Msg)
			req.SetQuestion(name, qtype)
			state := request.Request{W: nil, Req: req}
			got, ok, gotErr := addressRecords(context.Background(), ix, state, qtype)
			if !ok {
				continue
			}
			short++
			lookup := plugin.A
			if qtype == dns.TypeAAAA {
				lookup = plugin.AAAA
			}
			want, _, wantErr := lookup(ctx, b, "zone.test.", state, nil, plugin.Options{})
			if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && ix.IsNameError(gotErr) != ix.IsNameError(wantErr)) {
				t.Errorf("%s %s: error %v, plugin.A's %v", name, dns.TypeToString[qtype], gotErr, wantErr)
				continue
			}
			if !slices.EqualFunc(got, want, func(a, b dns.RR) bool {
				return dns.IsDuplicate(a, b) && a.Header().Ttl == b.Header().Ttl && a.Header().Name == b.Header().Name
			}) {
				t.Errorf("%s %s:\n got  %v\n want %v", name, dns.TypeToString[qtype], got, want)
			}
		}
	}
	if short < 20 {
		t.Errorf("only %d questions took the short way", short)
	}
}

// liveIndex is the index as the handler answers from it: a plugin.ServiceBackend that looks
// up nothing outside the zone.
type liveIndex struct{ *index.Index }

func (liveIndex) Lookup(context.Context, request.Request, string, uint16) (*dns.Msg, error) {
	return nil, errors.New("no upstream in this test")
}
