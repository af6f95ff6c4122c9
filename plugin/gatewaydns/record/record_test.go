package record

import (
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name     string
		key      string
		value    string
		wantHost string
		wantErr  string
	}{
		{name: "ipv4 host", key: "/skydns/test/a", value: `{"host":"10.0.0.1"}`, wantHost: "10.0.0.1"},
		{name: "name host with unknown fields ignored", key: "/skydns/test/a", value: `{"host":"lb.example.net","owner":"c1","targetstrip":1,"extra":[1]}`, wantHost: "lb.example.net"},
		{name: "text only is a TXT record", key: "/skydns/test/a", value: `{"text":"hello"}`},
		{name: "not JSON", key: "/skydns/test/a", value: `{host:`, wantErr: "invalid character"},
		{name: "wrong type for ttl", key: "/skydns/test/a", value: `{"host":"10.0.0.1","ttl":"300"}`, wantErr: "cannot unmarshal"},
		{name: "negative ttl", key: "/skydns/test/a", value: `{"host":"10.0.0.1","ttl":-1}`, wantErr: "cannot unmarshal"},
		{name: "host with a space", key: "/skydns/test/a", value: `{"host":"not a name"}`, wantErr: "neither an IP address nor a domain name"},
		{name: "host label longer than 63", key: "/skydns/test/a", value: `{"host":"` + strings.Repeat("x", 64) + `.example"}`, wantErr: "neither an IP"},
		{name: "port -1 means no SRV and is kept", key: "/skydns/test/a", value: `{"host":"10.0.0.1","port":-1}`, wantHost: "10.0.0.1"},
		{name: "port beyond 16 bits", key: "/skydns/test/a", value: `{"host":"10.0.0.1","port":65536}`, wantErr: "port 65536 is outside -1..65535"},
		{name: "negative weight", key: "/skydns/test/a", value: `{"host":"10.0.0.1","weight":-5}`, wantErr: "weight -5 is outside 0..65535"},
		{name: "priority beyond 16 bits", key: "/skydns/test/a", value: `{"host":"10.0.0.1","priority":70000}`, wantErr: "priority 70000 is outside 0..65535"},
		{name: "a megabyte host is named in short", key: "/skydns/test/a", value: `{"host":"` + strings.Repeat("x ", 512*1024) + `"}`, wantErr: "(1048576 bytes)"},
		{name: "neither host nor text", key: "/skydns/test/a", value: `{"port":80}`, wantErr: "neither host nor text"},
		{name: "key label longer than 63", key: "/skydns/test/" + strings.Repeat("k", 64), value: `{"host":"10.0.0.1"}`, wantErr: "valid domain name"},
		{name: "key name longer than 255", key: "/skydns/test" + strings.Repeat("/abcdefghij", 30), value: `{"host":"10.0.0.1"}`, wantErr: "valid domain name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Decode(tc.key, []byte(tc.value))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.key[:min(len(tc.key), 128)]) {
					t.Fatalf("error %q does not name the key", err)
				}
				if len(err.Error()) > 512 {
					t.Fatalf("error of %d bytes: a hostile value must not make a huge log line", len(err.Error()))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Host != tc.wantHost || s.Key != tc.key {
				t.Fatalf("got host %q key %q", s.Host, s.Key)
			}
		})
	}
}

func TestDecodeKeepsOwnerAndSources(t *testing.T) {
	v, err := Decode("/skydns/test/a/1", []byte(`{"host":"10.0.0.1","owner":"eu1","sources":["HTTPRoute/shop/web"]}`))
	if err != nil || v.Owner != "eu1" || len(v.Sources) != 1 || v.Sources[0] != "HTTPRoute/shop/web" {
		t.Fatalf("got %+v, %v", v, err)
	}
}

func TestRootCleansPrefix(t *testing.T) {
	for _, p := range []string{"skydns", "/skydns", "/skydns/", "skydns//"} {
		if got := Root(p); got != "/skydns/" {
			t.Errorf("Root(%q) = %q", p, got)
		}
	}
	if got := Root("dns/zone"); got != "/dns/zone/" {
		t.Errorf("Root(dns/zone) = %q", got)
	}
}
