package source

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func dnsEndpoint(name string, age int, entries ...DNSEndpointEntry) *DNSEndpoint {
	return &DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * -time.Hour))},
		Spec:       DNSEndpointSpec{Endpoints: entries},
	}
}

func entry(name, typ string, ttl int64, targets ...string) DNSEndpointEntry {
	return DNSEndpointEntry{DNSName: name, RecordType: typ, RecordTTL: ttl, Targets: targets}
}

func withMeta(d *DNSEndpoint, ns string, lbls, annots map[string]string) *DNSEndpoint {
	d.Namespace, d.Labels, d.Annotations = ns, lbls, annots
	return d
}

// TestDNSEndpointClaims maps DNSEndpoints through the claims and the merge, as the watcher
// does: what each publishes, and what is reported on it.
func TestDNSEndpointClaims(t *testing.T) {
	zone := NewDomainFilter([]string{"example.com"}, nil)
	base := Config{DomainFilter: zone, Zones: zone, DefaultTTL: 300, ControllerName: "dns-controller"}
	sel := func(s string) labels.Selector {
		l, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	cases := []struct {
		name    string
		cfg     *Config
		objs    []*DNSEndpoint
		want    []string // fmtEndpoints
		wantRej []string // fmtRejections
	}{
		{name: "A record with its TTL",
			objs: []*DNSEndpoint{dnsEndpoint("e", 0, entry("a.example.com", "A", 60, "192.0.2.1"))},
			want: []string{"a.example.com -> 192.0.2.1 ttl=60 from DNSEndpoint/app/e"}},
		{name: "several A targets, sorted and unique; no recordTTL is the default TTL",
			objs: []*DNSEndpoint{dnsEndpoint("e", 0, entry("a.example.com", "A", 0, "192.0.2.2", "192.0.2.1", "192.0.2.2"))},
			want: []string{"a.example.com -> 192.0.2.1,192.0.2.2 ttl=300 from DNSEndpoint/app/e"}},
		{name: "dual stack: an A and an AAAA entry on one name are one endpoint, the smaller TTL",
			objs: []*DNSEndpoint{dnsEndpoint("e", 0, entry("a.example.com", "A", 60, "192.0.2.1"), entry("a.example.com", "AAAA", 120, "2001:DB8::1"))},
			want: []string{"a.example.com -> 192.0.2.1,2001:db8::1 ttl=60 from DNSEndpoint/app/e"}},
		{name: "CNAME, trailing dot and case normalized",
			objs: []*DNSEndpoint{dnsEndpoint("e", 0, entry("WWW.example.com.", "CNAME", 0, "LB.example.net."))},
			want: []string{"www.example.com -> lb.example.net ttl=300 from DNSEndpoint/app/e"}},
		{name: "TXT records keep their case and spaces",
			objs: []*DNSEndpoint{dnsEndpoint("e", 0, entry("example.com", "TXT", 0, "v=spf1 include:_spf.example.net -all", "Hello World"))},
			want: []string{`example.com ->  ttl=300 from DNSEndpoint/app/e | TXT "Hello World" | TXT "v=spf1 include:_spf.example.net -all"`}},
		{name: "SRV at an underscore owner name",
			objs: []*DNSEndpoint{dnsEndpoint("e", 0, entry("_sip._tcp.example.com", "SRV", 0, "10 60 5060 sip1.example.com.", "20 0 5060 sip2.example.com"))},
			want: []string{"_sip._tcp.example.com ->  ttl=300 from DNSEndpoint/app/e | SRV 10 60 5060 sip1.example.com | SRV 20 0 5060 sip2.example.com"}},
		{name: "MX beside A and TXT on one name: typed records and addresses share a name",
			objs: []*DNSEndpoint{dnsEndpoint("e", 0, entry("example.com", "MX", 0, "10 mail.example.com"), entry("example.com", "A", 0, "192.0.2.1"), entry("example.com", "TXT", 0, "v=spf1 mx -all"))},
			want: []string{`example.com -> 192.0.2.1 ttl=300 from DNSEndpoint/app/e | MX 10 mail.example.com | TXT "v=spf1 mx -all"`}},
		{name: "typed records of two DNSEndpoints are unioned",
			objs: []*DNSEndpoint{dnsEndpoint("a", 0, entry("example.com", "TXT", 0, "one")), dnsEndpoint("b", 0, entry("example.com", "TXT", 0, "two"), entry("example.com", "TXT", 0, "one"))},
			want: []string{`example.com ->  ttl=300 from DNSEndpoint/app/a,DNSEndpoint/app/b | TXT "one" | TXT "two"`}},
		{name: "a wildcard name",
			objs: []*DNSEndpoint{dnsEndpoint("e", 0, entry("*.apps.example.com", "A", 0, "192.0.2.1"))},
			want: []string{"*.apps.example.com -> 192.0.2.1 ttl=300 from DNSEndpoint/app/e"}},
		{name: "CNAME beside A on one name: the A stays, the CNAME entry is reported",
			objs:    []*DNSEndpoint{dnsEndpoint("cname", 5, entry("a.example.com", "CNAME", 0, "lb.example.net")), dnsEndpoint("ip", 0, entry("a.example.com", "A", 0, "192.0.2.1"))},
			want:    []string{"a.example.com -> 192.0.2.1 ttl=300 from DNSEndpoint/app/ip"},
			wantRej: []string{"DNSEndpoint/app/cname a.example.com Conflict"}},
		{name: "CNAME beside TXT on one name: the TXT stays (a CNAME has no other data)",
			objs:    []*DNSEndpoint{dnsEndpoint("e", 0, entry("a.example.com", "CNAME", 0, "lb.example.net"), entry("a.example.com", "TXT", 0, "x"))},
			want:    []string{`a.example.com ->  ttl=300 from DNSEndpoint/app/e | TXT "x"`},
			wantRej: []string{"DNSEndpoint/app/e a.example.com Conflict"}},
		{name: "CNAME with several targets is skipped",
			objs:    []*DNSEndpoint{dnsEndpoint("e", 0, entry("a.example.com", "CNAME", 0, "one.example.net", "two.example.net"), entry("b.example.com", "A", 0, "192.0.2.1"))},
			want:    []string{"b.example.com -> 192.0.2.1 ttl=300 from DNSEndpoint/app/e"},
			wantRej: []string{"DNSEndpoint/app/e a.example.com InvalidTarget"}},
		{name: "an invalid dnsName is skipped",
			objs:    []*DNSEndpoint{dnsEndpoint("e", 0, entry("bad name.example.com", "A", 0, "192.0.2.1"), entry("192.0.2.9", "A", 0, "192.0.2.1"), entry("", "A", 0, "192.0.2.1"))},
			wantRej: []string{"DNSEndpoint/app/e - InvalidHostname", "DNSEndpoint/app/e 192.0.2.9 InvalidHostname", "DNSEndpoint/app/e bad name.example.com InvalidHostname"}},
		{name: "an unknown or empty record type is skipped",
			objs:    []*DNSEndpoint{dnsEndpoint("e", 0, entry("a.example.com", "NS", 0, "ns1.example.net"), entry("b.example.com", "", 0, "192.0.2.1"))},
			wantRej: []string{"DNSEndpoint/app/e a.example.com UnsupportedRecordType", "DNSEndpoint/app/e b.example.com UnsupportedRecordType"}},
		{name: "targets not matching the type skip the whole entry",
			objs: []*DNSEndpoint{dnsEndpoint("e", 0,
				entry("a.example.com", "A", 0, "192.0.2.1", "2001:db8::1"),
				entry("b.example.com", "AAAA", 0, "192.0.2.1"),
				entry("c.example.com", "CNAME", 0, "192.0.2.1"),
				entry("d.example.com", "A", 0, "lb.example.net"),
				entry("e.example.com", "TXT", 0, ""))},
			wantRej: []string{"DNSEndpoint/app/e a.example.com InvalidTarget", "DNSEndpoint/app/e b.example.com InvalidTarget", "DNSEndpoint/app/e c.example.com InvalidTarget",
				"DNSEndpoint/app/e d.example.com InvalidTarget", "DNSEndpoint/app/e e.example.com InvalidTarget"}},
		{name: "SRV and MX data that does not parse is skipped",
			objs: []*DNSEndpoint{dnsEndpoint("e", 0,
				entry("_a._tcp.example.com", "SRV", 0, "10 5 443"),
				entry("_b._tcp.example.com", "SRV", 0, "10 5 99999 lb.example.net"),
				entry("_c._tcp.example.com", "SRV", 0, "10 5 0 lb.example.net"),
				entry("_d._tcp.example.com", "SRV", 0, "10 5 443 192.0.2.1"),
				entry("m1.example.com", "MX", 0, "mail.example.net"),
				entry("m2.example.com", "MX", 0, "-1 mail.example.net"),
				entry("m3.example.com", "MX", 0, "10 ."))},
			wantRej: []string{"DNSEndpoint/app/e _a._tcp.example.com InvalidTarget", "DNSEndpoint/app/e _b._tcp.example.com InvalidTarget", "DNSEndpoint/app/e _c._tcp.example.com InvalidTarget",
				"DNSEndpoint/app/e _d._tcp.example.com InvalidTarget", "DNSEndpoint/app/e m1.example.com InvalidTarget", "DNSEndpoint/app/e m2.example.com InvalidTarget",
				"DNSEndpoint/app/e m3.example.com InvalidTarget"}},
		{name: "an A entry without targets publishes nothing and says so",
			objs:    []*DNSEndpoint{dnsEndpoint("e", 0, entry("a.example.com", "A", 0))},
			wantRej: []string{"DNSEndpoint/app/e a.example.com NoTargets"}},
		{name: "a recordTTL out of range is reported; the default TTL is used",
			objs:    []*DNSEndpoint{dnsEndpoint("e", 0, entry("a.example.com", "A", -5, "192.0.2.1"))},
			want:    []string{"a.example.com -> 192.0.2.1 ttl=300 from DNSEndpoint/app/e"},
			wantRej: []string{"DNSEndpoint/app/e a.example.com InvalidTTL"}},
		{name: "a name outside the domain filter but in the zones is reported",
			cfg:     &Config{DomainFilter: NewDomainFilter([]string{"eu1.example.com"}, nil), Zones: zone, DefaultTTL: 300},
			objs:    []*DNSEndpoint{dnsEndpoint("e", 0, entry("a.eu1.example.com", "A", 0, "192.0.2.1"), entry("a.us1.example.com", "A", 0, "192.0.2.1"))},
			want:    []string{"a.eu1.example.com -> 192.0.2.1 ttl=300 from DNSEndpoint/app/e"},
			wantRej: []string{"DNSEndpoint/app/e a.us1.example.com DomainFilter"}},
		{name: "a DNSEndpoint naming only other zones belongs to another controller: no Event",
			objs: []*DNSEndpoint{dnsEndpoint("e", 0, entry("a.example.org", "A", 0, "192.0.2.1"))}},
		{name: "namespace filter",
			cfg:  &Config{Namespaces: []string{"other"}, DomainFilter: zone, Zones: zone},
			objs: []*DNSEndpoint{dnsEndpoint("e", 0, entry("a.example.com", "A", 0, "192.0.2.1"))}},
		{name: "label filter (external-dns's crd source reads --label-filter)",
			cfg: &Config{LabelSelector: sel("dns=public"), DomainFilter: zone, Zones: zone},
			objs: []*DNSEndpoint{withMeta(dnsEndpoint("in", 0, entry("a.example.com", "A", 0, "192.0.2.1")), "app", map[string]string{"dns": "public"}, nil),
				withMeta(dnsEndpoint("out", 0, entry("b.example.com", "A", 0, "192.0.2.2")), "app", map[string]string{"dns": "private"}, nil)},
			want: []string{"a.example.com -> 192.0.2.1 ttl=0 from DNSEndpoint/app/in"}},
		{name: "annotation filter and controller annotation",
			cfg: &Config{AnnotationFilter: sel("team=a"), ControllerName: "dns-controller", DomainFilter: zone, Zones: zone},
			objs: []*DNSEndpoint{withMeta(dnsEndpoint("in", 0, entry("a.example.com", "A", 0, "192.0.2.1")), "app", nil, map[string]string{"team": "a"}),
				withMeta(dnsEndpoint("other-team", 0, entry("b.example.com", "A", 0, "192.0.2.2")), "app", nil, map[string]string{"team": "b"}),
				withMeta(dnsEndpoint("other-controller", 0, entry("c.example.com", "A", 0, "192.0.2.3")), "app", nil,
					map[string]string{"team": "a", "external-dns.kubernetes.io/controller": "someone-else"})},
			want: []string{"a.example.com -> 192.0.2.1 ttl=0 from DNSEndpoint/app/in"}},
	}
	if len(cases) < 15 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg == nil {
				cfg = &base
			}
			d := NewDesired()
			var rej []Rejection
			for _, o := range tc.objs {
				claims, r := cfg.DNSEndpointClaims(o)
				rej = append(rej, r...)
				d.Set(DNSEndpointRef(o), claims)
			}
			rej = append(rej, d.Conflicts()...)
			assertLines(t, "endpoints", fmtEndpoints(d.Endpoints()), tc.want)
			got := fmtRejections(rej)
			slices.Sort(got)
			assertLines(t, "rejections", got, tc.wantRej)
			for _, r := range rej {
				if !strings.Contains(r.Reason, "spec.endpoints[") && r.Cause != CauseConflict && r.Cause != CauseDomainFilter {
					t.Errorf("rejection %q does not say which entry", r)
				}
			}
		})
	}
}

// TestDNSEndpointFromUnstructured decodes what a dynamic client reads; a field of the wrong
// type is an error, not a panic.
func TestDNSEndpointFromUnstructured(t *testing.T) {
	d, err := DNSEndpointFromUnstructured(map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
		"metadata": map[string]any{"name": "e", "namespace": "app", "generation": int64(3)},
		"spec": map[string]any{"endpoints": []any{map[string]any{
			"dnsName": "a.example.com", "recordType": "A", "recordTTL": int64(60), "targets": []any{"192.0.2.1"},
			"setIdentifier": "x", "providerSpecific": []any{map[string]any{"name": "n", "value": "v"}}, "labels": map[string]any{"k": "v"},
		}}},
		"status": map[string]any{"observedGeneration": int64(2)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.Generation != 3 || d.Status.ObservedGeneration != 2 || len(d.Spec.Endpoints) != 1 || d.Spec.Endpoints[0].RecordTTL != 60 || d.Spec.Endpoints[0].Targets[0] != "192.0.2.1" {
		t.Fatalf("decoded %+v", d)
	}
	if _, err := DNSEndpointFromUnstructured(map[string]any{"spec": map[string]any{"endpoints": "not a list"}}); err == nil {
		t.Fatal("a spec of the wrong shape decoded")
	}
}
