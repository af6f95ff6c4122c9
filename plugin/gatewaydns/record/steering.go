package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Steering is what one owner of a name asks of the answers to that name when several owners
// publish it (shared/spec/steering.md): its share of the answers, its failover tier and the
// health check its addresses must pass. The writer puts the same Steering in every value it
// writes for the name; the zero Steering is "no policy", and a value without one encodes to
// exactly the bytes it had before steering existed.
//
// It travels in the value as one nested object that the stock etcd plugin ignores, e.g.
//
//	{"host":"10.0.0.1",...,"owner":"eu1","steering":{"weight":90,"priority":1,"healthCheck":"tcp://:443"}}
//
// under its own name because "priority" and "weight" at the top level are SRV data.
type Steering struct {
	// Weight is the owner's share of the answers among the owners of its tier, 0..MaxWeight,
	// relative to theirs; 0 is "only when nothing else is eligible". Read only when Weighted.
	Weight int
	// Weighted says the owner declared a weight: an owner without one answers with the
	// union of its tier, as today, or counts as DefaultWeight beside weighted owners.
	Weighted bool
	// Priority is the failover tier, 0..MaxPriority, lower first. Absent reads as 0.
	Priority int
	// HealthCheck is a health check in its canonical form (HealthCheck.String), "" for none.
	HealthCheck string

	// invalid says why the JSON object could not be read (a field of the wrong type), so that
	// Decode can refuse the policy without refusing the record.
	invalid string
}

// Limits of the values a Steering may hold.
const (
	MaxWeight     = 1000
	MaxPriority   = 100
	DefaultWeight = 100 // what an owner without a weight counts as beside weighted ones
)

// IsZero reports whether s asks for nothing: the value is then written without "steering".
func (s Steering) IsZero() bool { return s == Steering{} }

// steeringJSON is the wire form; Weight is a pointer so that an explicit 0 stays in.
type steeringJSON struct {
	Weight      *int   `json:"weight,omitempty"`
	Priority    int    `json:"priority,omitempty"`
	HealthCheck string `json:"healthCheck,omitempty"`
}

// MarshalJSON writes the fields that are set: "weight" when Weighted (0 included),
// "priority" when not 0, "healthCheck" when not empty.
func (s Steering) MarshalJSON() ([]byte, error) {
	w := steeringJSON{Priority: s.Priority, HealthCheck: s.HealthCheck}
	if s.Weighted {
		w.Weight = &s.Weight
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the object leniently: unknown fields are ignored, and a field of the
// wrong type does not fail the value (the record is still served, without the policy): it
// is kept as the reason Check gives. null leaves s as it is, as encoding/json does for values.
func (s *Steering) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var w steeringJSON
	if err := json.Unmarshal(b, &w); err != nil {
		*s = Steering{invalid: clip(err.Error())}
		return nil
	}
	*s = Steering{Priority: w.Priority, HealthCheck: w.HealthCheck}
	if w.Weight != nil {
		s.Weight, s.Weighted = *w.Weight, true
	}
	return nil
}

// Check is s with its health check in canonical form, or what makes s unusable: a field out of
// range or of the wrong type, or a health check that does not parse.
func (s Steering) Check() (Steering, error) {
	switch {
	case s.invalid != "":
		return Steering{}, errors.New(s.invalid)
	case s.Weighted && (s.Weight < 0 || s.Weight > MaxWeight):
		return Steering{}, fmt.Errorf("weight %d is outside 0..%d", s.Weight, MaxWeight)
	case s.Priority < 0 || s.Priority > MaxPriority:
		return Steering{}, fmt.Errorf("priority %d is outside 0..%d", s.Priority, MaxPriority)
	case s.HealthCheck != "":
		hc, err := ParseHealthCheck(s.HealthCheck)
		if err != nil {
			return Steering{}, err
		}
		s.HealthCheck = hc.String()
	}
	return s, nil
}

// Health check schemes.
const (
	CheckTCP   = "tcp"
	CheckHTTP  = "http"
	CheckHTTPS = "https"
)

// HealthCheck is a check that the serving servers run against each address of an owner:
// "<scheme>://[host]:<port>[/path]". A tcp check connects to the address and port; an http or
// https check sends GET path to the address and port, and passes on a 2xx or 3xx status. Host,
// when given, is what an http(s) check sends as the Host header and the TLS server name (as
// Route 53 does with a health check's domain name and IP address); without it the address
// itself. The check always connects to the record's address, never to Host.
type HealthCheck struct {
	Scheme string // CheckTCP, CheckHTTP or CheckHTTPS
	Host   string // lower-cased; "" for the address itself
	Port   uint16
	// Path is the escaped path and query of an http(s) check ("/" when none was given); "" for tcp.
	Path string
}

// maxHealthCheck bounds the length of a health check: it is in every value of the name.
const maxHealthCheck = 256

// ParseHealthCheck reads a health check, e.g. "tcp://:443", "http://:8080/healthz",
// "https://app.example.com/ready" (http and https default to ports 80 and 443; tcp needs one).
func ParseHealthCheck(s string) (HealthCheck, error) {
	if len(s) > maxHealthCheck {
		return HealthCheck{}, fmt.Errorf("health check %q is longer than %d bytes", clip(s), maxHealthCheck)
	}
	bad := func(why string) (HealthCheck, error) {
		return HealthCheck{}, fmt.Errorf("health check %q: %s; want <tcp|http|https>://[host]:<port>[/path], e.g. tcp://:443 or http://:8080/healthz", s, why)
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return bad("does not parse as a URL")
	}
	hc := HealthCheck{Scheme: strings.ToLower(u.Scheme)}
	switch {
	case hc.Scheme != CheckTCP && hc.Scheme != CheckHTTP && hc.Scheme != CheckHTTPS:
		return bad("the scheme is not tcp, http or https")
	case u.Opaque != "" || u.Host == "" && !strings.Contains(s, "://"):
		return bad("it has no //[host]:port part")
	case u.User != nil:
		return bad("it carries user information")
	case u.Fragment != "" || u.RawFragment != "":
		return bad("it has a fragment")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host != "" {
		if _, err := netip.ParseAddr(host); err != nil && !validHostName(host) {
			return bad("the host is neither an IP address nor a host name")
		}
	}
	hc.Host = host
	if hc.Port, err = checkPort(hc.Scheme, u.Port()); err != nil {
		return bad(err.Error())
	}
	if hc.Scheme == CheckTCP {
		if host != "" {
			return bad("a tcp check takes no host: it connects to each address of the name")
		}
		if u.Path != "" || u.RawQuery != "" || u.ForceQuery {
			return bad("a tcp check takes no path")
		}
		return hc, nil
	}
	hc.Path = u.EscapedPath()
	if hc.Path == "" {
		hc.Path = "/"
	}
	if u.RawQuery != "" {
		hc.Path += "?" + u.RawQuery
	}
	return hc, nil
}

// checkPort is the port of a check of scheme, port as written ("": the scheme's default).
func checkPort(scheme, port string) (uint16, error) {
	switch {
	case port != "":
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return 0, errors.New("the port is not a number 1..65535")
		}
		return uint16(n), nil
	case scheme == CheckHTTP:
		return 80, nil
	case scheme == CheckHTTPS:
		return 443, nil
	}
	return 0, errors.New("a tcp check needs a port")
}

// String is the canonical form, e.g. "tcp://:443", "https://app.example.com:443/ready".
func (hc HealthCheck) String() string {
	host := hc.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return hc.Scheme + "://" + host + ":" + strconv.Itoa(int(hc.Port)) + hc.Path
}

// Target is where the check of address addr connects: addr and the check's port, as
// net.Dial takes it.
func (hc HealthCheck) Target(addr string) string {
	return net.JoinHostPort(addr, strconv.Itoa(int(hc.Port)))
}

// validHostName reports whether h is a host name: labels of 1..63 letters, digits and '-',
// 253 bytes at most.
func validHostName(h string) bool {
	if len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
