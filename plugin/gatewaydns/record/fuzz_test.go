package record

import (
	"encoding/json"
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"
)

// FuzzDecode: Decode never panics, and what it accepts can be served: the host is empty, an
// IP address or a domain name, and the key maps to a valid domain name.
func FuzzDecode(f *testing.F) {
	for _, s := range [][2]string{
		{"/skydns/test/zone/app/1", `{"host":"10.0.0.1"}`},
		{"/skydns/test/zone/app/1", `{"host":"2001:db8::1","ttl":60}`},
		{"/skydns/test/zone/app/1", `{"host":"target.example.org","port":443,"priority":5,"weight":10}`},
		{"/skydns/test/zone/txt/1", `{"text":"hello world"}`},
		{"/skydns/test/zone/app/1", `{"host":""}`},
		{"/skydns/test/zone/app/1", `{"host":"bad host"}`},
		{"/skydns/test/zone/app/1", `{"host":123}`},
		{"/skydns/test/zone//app/1", `{"host":"10.0.0.1"}`},
		{"/skydns/" + strings.Repeat("a/", 100), `{"host":"10.0.0.1"}`},
		{"/skydns/test/zone/\xff\xfe/1", `{"host":"10.0.0.1"}`},
		{"/skydns/test/zone/app/1", `[1,2,3]`},
		{"/skydns/test/zone/app/1", `{"host":"a..b"}`},
		{"", `{"host":"10.0.0.1"}`},
		{"/skydns/test/zone/app/1", `{"host":"10.0.0.1","port":70000}`},
		{"/skydns/test/zone/app/1", `{"host":"10.0.0.1","priority":-1}`},
		{"/skydns/test/zone/app/1", `{"host":"10.0.0.1","ttl":300,"targetstrip":1,"owner":"eu1","sources":["HTTPRoute/ns/a","HTTPRoute/ns/b"]}`},
		{"/skydns/test/zone/app/1", ` { "host" : "a.b" , "mail" : true , "sources" : [ ] , "ttl" : 4294967295 } `},
		{"/skydns/test/zone/app/1", `{"host":"10.0.0.1","ttl":4294967296}`},
		{"/skydns/test/zone/app/1", `{"Host":"10.0.0.1","ttl":1e2,"text":"\u00e9"}`},
		{"/skydns/test/zone/app/1", `{"host":"10.0.0.1","host":"10.0.0.2","sources":["a"],"sources":[]}`},
		{"/skydns/test/zone/app/1", `{"host":null,"port":-0,"weight":01}`},
		{"/skydns/test/zone/app/1", `{"host":"10.0.0.1","owner":"eu1","steering":{"weight":90,"priority":1,"healthCheck":"tcp://:443"}}`},
		{"/skydns/test/zone/app/1", `{"host":"10.0.0.1","steering":{"weight":0},"steering":{"priority":2}}`},
		{"/skydns/test/zone/app/1", `{"host":"10.0.0.1","steering":{"Weight":5,"weight":null}}`},
		{"/skydns/test/zone/app/1", `{"host":"10.0.0.1","steering":{"weight":"5"}}`},
		{"/skydns/test/zone/app/1", `{"host":"10.0.0.1","steering":7}`},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		var fast, slow Value
		if parseValue(value, &fast) {
			if err := json.Unmarshal(value, &slow); err != nil || !reflect.DeepEqual(fast, slow) {
				t.Fatalf("parseValue(%q) = %+v; encoding/json: %+v, %v", value, fast, slow, err)
			}
		}
		if plainKeyName(key) {
			if _, ok := dns.IsDomainName(msg.Domain(key)); !ok {
				t.Fatalf("plainKeyName(%q), but %q is not a domain name", key, msg.Domain(key))
			}
		}
		s, err := Decode(key, value)
		if err != nil {
			return
		}
		if s.Host != "" && net.ParseIP(s.Host) == nil {
			if _, ok := dns.IsDomainName(s.Host); !ok {
				t.Fatalf("Decode(%q, %q) accepted host %q: neither IP nor domain name", key, value, s.Host)
			}
		}
		if s.Host == "" && s.Text == "" {
			t.Fatalf("Decode(%q, %q) accepted a value with neither host nor text", key, value)
		}
		if _, ok := dns.IsDomainName(msg.Domain(key)); !ok {
			t.Fatalf("Decode accepted key %q whose name %q is not a domain name", key, msg.Domain(key))
		}
		for _, v := range []int{s.Port, s.Priority, s.Weight} {
			if v < 0 || v > 0xffff {
				t.Fatalf("Decode(%q) accepted port/priority/weight %d: SRV/MX would wrap it", value, v)
			}
		}
		if _, err := s.Steering.Check(); err != nil {
			t.Fatalf("Decode(%q) kept steering %+v that does not check: %v", value, s.Steering, err)
		}
		if s.Key != key {
			t.Fatalf("Key = %q, want %q", s.Key, key)
		}
	})
}
