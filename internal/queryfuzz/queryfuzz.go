// Package queryfuzz holds what the two fuzz targets of the serve path share: the zone they
// start from, their seeds, and how a fuzzed input becomes the writes the index takes and the
// question a server is asked. The index's target (FuzzQuery in plugin/gatewaydns/index)
// checks the index's reads; the handler's (FuzzAnswer in plugin/gatewaydns) checks the reply
// built from them. It imports neither package, so that the tests of both can import it.
package queryfuzz

import (
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Zone is the zone a relative fuzzed name is asked in.
const Zone = "zone.test."

// Zones are the zones served: Zone, and the reverse zone of the fixture's PTR record.
var Zones = []string{Zone, "in-addr.arpa."}

func kv(key, value string) record.KV { return record.KV{Key: key, Value: []byte(value)} }

// fixture is the zone every input starts from: addresses, CNAMEs in and out of the zone and to
// themselves, text, mail, a wildcard, a deep name, a nameserver key and a PTR record.
func fixture() []record.KV {
	return []record.KV{
		kv("/skydns/test/zone/app/3e6bee2e", `{"host":"10.0.0.1"}`),
		kv("/skydns/test/zone/app/9a0c11f0", `{"host":"2001:db8::1"}`),
		kv("/skydns/test/zone/own", `{"host":"10.0.0.3","port":8080}`),
		kv("/skydns/test/zone/cname/1", `{"host":"app.zone.test"}`),
		kv("/skydns/test/zone/loop/1", `{"host":"loop.zone.test"}`),
		kv("/skydns/test/zone/ext/1", `{"host":"www.example.org"}`),
		kv("/skydns/test/zone/txt/1", `{"text":"hello"}`),
		kv("/skydns/test/zone/mail/1", `{"host":"mx.zone.test","mail":true,"priority":5}`),
		kv("/skydns/test/zone/mx/1", `{"host":"10.0.0.9"}`),
		kv("/skydns/test/zone/apps/*/k1", `{"host":"10.1.0.1"}`),
		kv("/skydns/test/zone/deep/a/b/c/d", `{"host":"10.0.0.6"}`),
		kv("/skydns/test/zone/dns/ns/1", `{"host":"10.0.0.53"}`),
		kv("/skydns/arpa/in-addr/10/0/0/1", `{"host":"app.zone.test"}`),
	}
}

// Input is one fuzzed input: a key K1 put with V1 in the full load, a key K2 put with V2 by
// the watch, and the question for Name of type QType.
type Input struct {
	K1    string
	V1    []byte
	K2    string
	V2    []byte
	Name  string
	QType uint16
}

// Fuzz runs check for the seeds and for the fuzzed inputs whose question a server can be
// asked (Question): q is that question, zone the zone it is in.
func Fuzz(f *testing.F, check func(t *testing.T, in Input, q *dns.Msg, zone string)) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, k1 string, v1 []byte, k2 string, v2 []byte, name string, qtype uint16) {
		in := Input{K1: k1, V1: v1, K2: k2, V2: v2, Name: name, QType: qtype}
		if q, zone := in.Question(); q != nil {
			check(t, in, q, zone)
		}
	})
}

// addSeeds adds the seed inputs to f, in the order of the fuzz function's arguments. The
// corpus in the targets' testdata/fuzz directories holds more.
func addSeeds(f *testing.F) {
	for _, s := range []struct {
		k1, v1, k2, v2, name string
		qtype                uint16
	}{
		{"/skydns/test/zone/new/1", `{"host":"10.9.9.9"}`, "", "", "new", dns.TypeA},
		{"/skydns/test/zone/app/1", `{"host":"10.9.9.9"}`, "/skydns/test/zone/app/3e6bee2e", "", "app", dns.TypeSRV},
		{"/skydns/test/zone/x/1", `{"text":"` + strings.Repeat("t", 300) + `"}`, "", "", "x", dns.TypeTXT},
		{"/skydns/test/zone/c/1", `{"host":"c.zone.test"}`, "", "", "c", dns.TypeA},
		{"/skydns/test/zone//1", `{"host":"10.0.0.1"}`, "/skydns/test/zone/a//b", `{"host":"10.0.0.2"}`, "", dns.TypeA},
		{"/skydns/test/zone/" + strings.Repeat("d/", 100) + "1", `{"host":"10.0.0.1"}`, "", "", strings.Repeat("d.", 100), dns.TypeA},
		{"/skydns/test/zone/*/1", `{"host":"10.0.0.1"}`, "", "", "*.apps", dns.TypeA},
		{"/skydns/test/zone/u/1", `{"host":"10.0.0.1"}`, "", "", "any.deep", dns.TypeMX},
		{"/skydns/test/zone/m/1", `{"host":"m.zone.test","mail":true}`, "", "", "m", dns.TypeMX},
		{"/skydns/test/zone/cn/1", `{"host":"ext.zone.test"}`, "", "", "cn", dns.TypeCNAME},
		{"/skydns/arpa/in-addr/10/0/0/2", `{"host":"x.zone.test"}`, "", "", "2.0.0.10.in-addr.arpa.", dns.TypePTR},
		{"/skydns/test/zone/h/1", `{"host":"bad\u00ff"}`, "", "", "h", dns.TypeSOA},
		{"/skydns/test/zone/\xff/1", `{"host":"10.0.0.1"}`, "", "", "\xff", dns.TypeNS},
		{"/skydns/test/zone/e/1", `{"host":"10.0.0.1","ttl":4294967295,"port":65535,"priority":65535,"weight":65535}`, "", "", "e", dns.TypeHINFO},
		{"/skydns/test/zone/q/1", `{"host":"q.zone.test","targetstrip":1000}`, "", "", "q", dns.TypeSRV},
		{"/skydns/test/zone/cname/2", `{"host":"10.9.9.9"}`, "/skydns/test/zone/cname/3", `{"host":"ext.zone.test"}`, "cname", dns.TypeA},
		{"/skydns/test/zone/mx/1", `{"host":"m.zone.test","mail":true,"priority":10}`, "/skydns/test/zone/mx/2", `{"host":"10.9.9.9"}`, "mx", dns.TypeA},
		{"/skydns/test/zone/_s/_tcp/n/1", `{"host":"s.zone.test","port":443}`, "/skydns/test/zone/_s/_tcp/n/2", `{"text":"v=1"}`, "n._tcp._s", dns.TypeTXT},
		// The apex: its SOA and NS answers are the handler's own, not plugin.SOA's or plugin.NS's.
		{"/skydns/test/zone/dns/ns/2", `{"host":"ns.example.net"}`, "", "", "", dns.TypeNS},
		{"/skydns/test/zone/n/1", `{"host":"10.0.0.7"}`, "", "", "", dns.TypeSOA},
		{"/skydns/test/zone/n/1", `{"host":"10.0.0.7"}`, "", "", "n", dns.TypeSOA},
	} {
		f.Add(s.k1, []byte(s.v1), s.k2, []byte(s.v2), s.name, s.qtype)
	}
}

// Index is what Fill writes to: an index.Index, which this package cannot name (the index's
// own tests import it).
type Index interface {
	Root() string
	Load(prefix string, kvs []record.KV)
	Apply(changes []record.Change)
}

// Fill loads ix with the fixture and K1 under its root, then applies Changes.
func (in Input) Fill(ix Index) {
	ix.Load(ix.Root(), append(fixture(), record.KV{Key: in.K1, Value: in.V1}))
	ix.Apply(in.Changes())
}

// Changes are the watch's changes after the load: K2 put with V2, then K1 deleted when V2 has
// an odd length, else put again with an empty value (one the index cannot decode).
func (in Input) Changes() []record.Change {
	return []record.Change{
		{KV: record.KV{Key: in.K2, Value: in.V2}},
		{KV: record.KV{Key: in.K1}, Deleted: len(in.V2)%2 == 1},
	}
}

// Question is the question for Name, relative to Zone unless it ends in a dot (the apex when
// empty), as a server receives it: through the wire, so that only names a DNS message can
// carry are asked. It is nil, and zone "", when no message carries it or it is in none of
// Zones; zone is the zone it is in.
func (in Input) Question() (q *dns.Msg, zone string) {
	qname := in.Name
	switch {
	case qname == "":
		qname = Zone
	case !strings.HasSuffix(qname, "."):
		qname += "." + Zone
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(qname), in.QType)
	wire, err := m.Pack()
	if err != nil {
		return nil, ""
	}
	q = new(dns.Msg)
	if err := q.Unpack(wire); err != nil {
		return nil, ""
	}
	zone = plugin.Zones(Zones).Matches(strings.ToLower(q.Question[0].Name))
	if zone == "" {
		return nil, ""
	}
	return q, zone
}
