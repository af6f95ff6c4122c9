package source

import (
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// FuzzDNSEndpointClaims: any entry maps without a panic; a published entry has a valid name,
// and its targets and records are what a writer can write and every reader decode: each value
// decodes at the name's key, a typed record is never taken for a CNAME, and one entry is
// either published or reported.
func FuzzDNSEndpointClaims(f *testing.F) {
	for _, s := range [][3]string{
		{"a.example.com", "A", "192.0.2.1"},
		{"_sip._tcp.example.com", "SRV", "10 5 5060 sip.example.com."},
		{"example.com", "MX", "10 mail.example.com"},
		{"example.com", "TXT", "v=spf1 -all"},
		{"www.example.com", "CNAME", "lb.example.net"},
		{"x.example.com", "SRV", "1 1 0 a.example.com"},
		{"x.example.com", "MX", "65536 a.example.com"},
		{"*.example.com", "aaaa", "::ffff:192.0.2.1"},
	} {
		f.Add(s[0], s[1], s[2], int64(60))
	}
	cfg := Config{ControllerName: "dns-controller"}
	f.Fuzz(func(t *testing.T, name, typ, target string, ttl int64) {
		d := dnsEndpoint("e", 0, entry(name, typ, ttl, target))
		claims, rej := cfg.DNSEndpointClaims(d)
		if len(claims)+len(rej) == 0 {
			t.Fatalf("entry %q %q %q neither published nor reported", name, typ, target)
		}
		for _, c := range claims {
			if _, err := dnsEndpointName(c.Name); err != nil {
				t.Fatalf("published name %q: %v", c.Name, err)
			}
			ep := record.Endpoint{Name: c.Name, Targets: c.Targets, Records: c.Records, TTL: c.TTL}
			for _, tg := range c.Targets {
				if _, err := record.Decode(record.Key("skydns", c.Name, "o", tg), record.NewValue(ep, "o", tg).Encode()); err != nil {
					t.Fatalf("target %q: %v", tg, err)
				}
			}
			for _, r := range c.Records {
				v, err := record.Decode(r.Key("skydns", c.Name, "o"), record.NewTypedValue(ep, "o", r).Encode())
				if err != nil {
					t.Fatalf("record %s: %v", r, err)
				}
				if k := record.KindOf(&v.Service); k == record.CNAME || k == record.Address {
					t.Fatalf("record %s reads as kind %d", r, k)
				}
			}
		}
	})
}
