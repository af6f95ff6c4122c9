package record

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/etcd/msg"
)

func TestValueCarriesSteeringInAnObjectStockReadersIgnore(t *testing.T) {
	ep := Endpoint{Name: "app.example.com", Targets: []string{"10.0.0.1"}, TTL: 60,
		Sources:  []ObjectRef{{Kind: "HTTPRoute", Namespace: "ns", Name: "web"}},
		Steering: Steering{Weight: 90, Weighted: true, Priority: 1, HealthCheck: "tcp://:443"}}
	for _, tc := range []struct {
		behaviour string
		steering  Steering
		want      string
	}{
		{"no policy: the bytes of a value before steering existed", Steering{},
			`{"host":"10.0.0.1","ttl":60,"targetstrip":1,"owner":"eu1","sources":["HTTPRoute/ns/web"]}`},
		{"every field", ep.Steering,
			`{"host":"10.0.0.1","ttl":60,"targetstrip":1,"owner":"eu1","sources":["HTTPRoute/ns/web"],"steering":{"weight":90,"priority":1,"healthCheck":"tcp://:443"}}`},
		{"weight 0 is written: it is not the absence of a weight", Steering{Weighted: true},
			`{"host":"10.0.0.1","ttl":60,"targetstrip":1,"owner":"eu1","sources":["HTTPRoute/ns/web"],"steering":{"weight":0}}`},
		{"a priority alone", Steering{Priority: 2},
			`{"host":"10.0.0.1","ttl":60,"targetstrip":1,"owner":"eu1","sources":["HTTPRoute/ns/web"],"steering":{"priority":2}}`},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			ep := ep
			ep.Steering = tc.steering
			b := NewValue(ep, "eu1", "10.0.0.1").Encode()
			if string(b) != tc.want {
				t.Fatalf("value = %s\nwant    %s", b, tc.want)
			}
			var s msg.Service // what the stock etcd plugin decodes: no SRV priority or weight
			if err := json.Unmarshal(b, &s); err != nil || s.Host != "10.0.0.1" || s.Priority != 0 || s.Weight != 0 {
				t.Fatalf("stock reader sees %+v (%v)", s, err)
			}
			v, err := Decode("/skydns/com/example/app/01234567", b)
			if err != nil || v.Steering != tc.steering || v.SteeringIgnored != "" {
				t.Fatalf("Decode = %+v, %v; want steering %+v", v.Steering, err, tc.steering)
			}
			p, err := ParseValue(b)
			if err != nil || !p.Equal(NewValue(ep, "eu1", "10.0.0.1")) {
				t.Fatalf("ParseValue = %+v, %v", p, err)
			}
		})
	}
}

func TestTypedRecordsCarryNoSteering(t *testing.T) {
	ep := Endpoint{Name: "app.example.com", Steering: Steering{Weight: 5, Weighted: true}}
	b := NewTypedValue(ep, "eu1", TXT("hello")).Encode()
	if strings.Contains(string(b), "steering") {
		t.Fatalf("a TXT value carries steering: %s", b)
	}
}

func TestDecodeServesTheRecordWhenItsSteeringIsUnusable(t *testing.T) {
	const key = "/skydns/com/example/app/1"
	for _, tc := range []struct {
		behaviour, steering string
		want                Steering
		ignored             string // part of SteeringIgnored; "" when the steering is used
	}{
		{"weight, priority and check", `{"weight":90,"priority":1,"healthCheck":"tcp://:443"}`,
			Steering{Weight: 90, Weighted: true, Priority: 1, HealthCheck: "tcp://:443"}, ""},
		{"a check written by hand is read in its canonical form", `{"healthCheck":"HTTP://App.Example.com/healthz"}`,
			Steering{HealthCheck: "http://app.example.com:80/healthz"}, ""},
		{"an unknown field is ignored", `{"weight":1,"region":"eu"}`, Steering{Weight: 1, Weighted: true}, ""},
		{"null is no policy", `null`, Steering{}, ""},
		{"an empty object is no policy", `{}`, Steering{}, ""},
		{"weight above 1000", `{"weight":1001}`, Steering{}, "weight 1001 is outside 0..1000"},
		{"negative weight", `{"weight":-1}`, Steering{}, "weight -1 is outside"},
		{"priority above 100", `{"priority":101}`, Steering{}, "priority 101 is outside 0..100"},
		{"weight of the wrong type", `{"weight":"90"}`, Steering{}, "cannot unmarshal"},
		{"not an object", `[1]`, Steering{}, "cannot unmarshal"},
		{"a check that does not parse", `{"healthCheck":"ftp://:21"}`, Steering{}, "not tcp, http or https"},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			v, err := Decode(key, []byte(`{"host":"10.0.0.1","owner":"eu1","steering":`+tc.steering+`}`))
			if err != nil {
				t.Fatalf("the record is refused: %v", err)
			}
			if v.Host != "10.0.0.1" || v.Owner != "eu1" {
				t.Fatalf("the record lost its data: %+v", v)
			}
			if v.Steering != tc.want {
				t.Errorf("steering = %+v, want %+v", v.Steering, tc.want)
			}
			switch {
			case tc.ignored == "" && v.SteeringIgnored != "":
				t.Errorf("steering ignored: %s", v.SteeringIgnored)
			case tc.ignored != "" && !strings.Contains(v.SteeringIgnored, tc.ignored):
				t.Errorf("SteeringIgnored = %q, want it to say %q", v.SteeringIgnored, tc.ignored)
			case tc.ignored != "" && !strings.Contains(v.SteeringIgnored, key):
				t.Errorf("SteeringIgnored = %q does not name the key", v.SteeringIgnored)
			}
		})
	}
}

func TestValueWithOtherSteeringIsNotCurrent(t *testing.T) {
	ep := Endpoint{Name: "a.b", Targets: []string{"10.0.0.1"}, Steering: Steering{Weight: 90, Weighted: true}}
	have := NewValue(ep, "o", "10.0.0.1")
	for _, s := range []Steering{{}, {Weight: 10, Weighted: true}, {Weight: 90}, {Weight: 90, Weighted: true, Priority: 1}, {Weight: 90, Weighted: true, HealthCheck: "tcp://:80"}} {
		want := ep
		want.Steering = s
		if have.Current(NewValue(want, "o", "10.0.0.1")) {
			t.Errorf("a value with steering %+v is current for %+v", have.Steering, s)
		}
	}
	if !have.Current(NewValue(ep, "o", "10.0.0.1")) {
		t.Error("the same steering is not current")
	}
}

func TestParseHealthCheck(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "tcp://:443", want: "tcp://:443"},
		{in: "http://:8080/healthz", want: "http://:8080/healthz"},
		{in: "https://app.example.com:8443/ready?full=1", want: "https://app.example.com:8443/ready?full=1"},
		{in: "http://:8080", want: "http://:8080/"},
		{in: "https://App.Example.COM./x", want: "https://app.example.com:443/x"},
		{in: "http://[2001:db8::1]:80/", want: "http://[2001:db8::1]:80/"},
		{in: " tcp://:53 ", want: "tcp://:53"},
		{in: "tcp://:0", err: "not a number 1..65535"},
		{in: "tcp://:65536", err: "not a number 1..65535"},
		{in: "tcp://", err: "a tcp check needs a port"},
		{in: "tcp://app.example.com:443", err: "takes no host"},
		{in: "tcp://:443/path", err: "takes no path"},
		{in: "udp://:53", err: "not tcp, http or https"},
		{in: ":443", err: "does not parse"},
		{in: "tcp:443", err: "no //[host]:port"},
		{in: "http://user:pw@:80/", err: "user information"},
		{in: "http://:80/#top", err: "fragment"},
		{in: "http://bad_host:80/", err: "neither an IP address nor a host name"},
		{in: "http://:80/" + strings.Repeat("a", 300), err: "longer than 256"},
		{in: "", err: "not tcp, http or https"},
	} {
		hc, err := ParseHealthCheck(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseHealthCheck(%q) = %v, %v; want an error saying %q", tc.in, hc, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("ParseHealthCheck(%q): %v", tc.in, err)
		case tc.err == "" && hc.String() != tc.want:
			t.Errorf("ParseHealthCheck(%q) = %q, want %q", tc.in, hc, tc.want)
		case tc.err == "":
			again, err := ParseHealthCheck(hc.String())
			if err != nil || again != hc {
				t.Errorf("the canonical form %q reads as %+v, %v; want %+v", hc, again, err, hc)
			}
		}
	}
	hc, _ := ParseHealthCheck("http://:8080/healthz")
	if got := hc.Target("2001:db8::1"); got != "[2001:db8::1]:8080" {
		t.Errorf("Target = %q", got)
	}
}
