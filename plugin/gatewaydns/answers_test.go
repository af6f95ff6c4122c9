package gatewaydns

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin/file"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/zonefixture"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// loadedStanza is the handler of stanza, serving kvs as its feed's index once loaded.
func loadedStanza(t *testing.T, stanza string, kvs []record.KV) *GatewayDNS {
	t.Helper()
	cfg, err := parse(caddy.NewTestController("dns", stanza))
	if err != nil {
		t.Fatal(err)
	}
	g, st := newPlugin(cfg)
	for _, p := range st.prefixes {
		st.index.Load(p, kvs)
	}
	return g
}

type handler interface {
	ServeDNS(context.Context, dns.ResponseWriter, *dns.Msg) (int, error)
}

// answerText is a reply as a comparable string: rcode, and each section's records, sorted.
func answerText(t *testing.T, h handler, name string, qtype uint16) string {
	t.Helper()
	req := new(dns.Msg)
	req.SetQuestion(name, qtype)
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	if _, err := h.ServeDNS(context.Background(), rec, req); err != nil || rec.Msg == nil {
		t.Fatalf("%s %d: %v", name, qtype, err)
	}
	section := func(rrs []dns.RR) string {
		var s []string
		for _, rr := range rrs {
			s = append(s, strings.ReplaceAll(rr.String(), "\t", " "))
		}
		slices.Sort(s)
		return strings.Join(s, "; ")
	}
	m := rec.Msg
	if len(m.Answer) > 0 {
		m.Ns = nil // the file plugin adds the zone's NS records to an answer, the etcd plugin not
	}
	return fmt.Sprintf("%s answer [%s] ns [%s]", dns.RcodeToString[m.Rcode], section(m.Answer), section(m.Ns))
}

// The point of exact names: a plain zone made of the synthetic transfer, served by the stock file
// plugin, answers every name and every question as the plugin does.
func TestAZoneLoadedFromTheTransferAnswersAsExactNames(t *testing.T) {
	g := loadedStanza(t, "gatewaydns zone.test {\n exact-names\n transfer-synthetic\n}", zonefixture.Records)
	z := file.NewZone("zone.test.", "")
	for _, rr := range zonefixture.Transferred(t, g, "zone.test.", 0)[1:] {
		if err := z.Insert(rr); err != nil {
			t.Fatal(err)
		}
	}
	f := file.File{Zones: file.Zones{Z: map[string]*file.Zone{"zone.test.": z}, Names: []string{"zone.test."}}}
	cnames := map[string]bool{"alias.zone.test.": true, "1.alias.zone.test.": true, "2.clash.zone.test.": true}
	names := []string{"zone.test.", "nothere.zone.test.", "x.apps.zone.test.", "eu1.zone.test.", "dns.zone.test."}
	for _, kv := range zonefixture.Records {
		names = append(names, msgDomain(kv.Key))
		if i := strings.LastIndexByte(kv.Key, '/'); i > 0 {
			names = append(names, msgDomain(kv.Key[:i]))
		}
	}
	for _, name := range names {
		for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeSRV, dns.TypeTXT, dns.TypeMX, dns.TypeNS, dns.TypeSOA} {
			if cnames[name] && qtype != dns.TypeA && qtype != dns.TypeCNAME {
				// A zone's CNAME answers every type; the plugin answers SRV with the name host
				// as target, and other types only if the target has them (README).
				continue
			}
			want, got := answerText(t, g, name, qtype), answerText(t, f, name, qtype)
			if got != want {
				t.Errorf("%s %s:\nsecondary %s\nprimary   %s", name, dns.TypeToString[qtype], got, want)
			}
		}
	}
}

// Off by default, so that the stock etcd plugin's answers stay the default: a name answers
// with its whole subtree (web.eu1 with www.web.eu1's address too), as the etcd plugin does;
// with exact-names, with its own key's and record-id children's records only.
func TestExactNamesAreOffByDefault(t *testing.T) {
	for _, tc := range []struct{ stanza, want string }{
		{"gatewaydns zone.test", "NOERROR answer [web.eu1.zone.test. 300 IN A 10.2.0.1; web.eu1.zone.test. 300 IN A 10.2.0.2] ns []"},
		{"gatewaydns zone.test {\n exact-names\n}", "NOERROR answer [web.eu1.zone.test. 300 IN A 10.2.0.1] ns []"},
	} {
		g := loadedStanza(t, tc.stanza, zonefixture.Records)
		if got := answerText(t, g, "web.eu1.zone.test.", dns.TypeA); got != tc.want {
			t.Errorf("%q: web.eu1.zone.test. A:\n got %s\nwant %s", tc.stanza, got, tc.want)
		}
	}
}

func msgDomain(key string) string {
	parts := strings.Split(strings.TrimPrefix(key, "/skydns/"), "/")
	slices.Reverse(parts)
	return strings.Join(parts, ".") + "."
}
