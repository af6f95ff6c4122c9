package e2e

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Exchange asks addr one question over netw ("udp" or "tcp"), with a 3 s timeout.
func Exchange(netw, addr, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: netw, Timeout: 3 * time.Second}
	r, _, err := c.Exchange(m, addr)
	return r, err
}

// Ask sends one question over netw ("udp" or "tcp") and returns the reply; three failed tries
// fail the test.
func Ask(t testing.TB, netw, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	var lastErr error
	for range 3 {
		r, err := Exchange(netw, addr, name, qtype)
		if err == nil {
			return r
		}
		lastErr = err
	}
	t.Fatalf("%s %s %s over %s: %v", addr, name, dns.TypeToString[qtype], netw, lastErr)
	return nil
}

// WaitFor asks until cond holds for the reply, or fails after timeout. A server that does not
// answer yet (still starting) counts as the condition not holding.
func WaitFor(t testing.TB, timeout time.Duration, addr, name string, qtype uint16, cond func(*dns.Msg) bool) *dns.Msg {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r, err := Exchange("udp", addr, name, qtype)
		if err == nil && cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s: condition not met within %s; last reply: %v (error %v)", name, dns.TypeToString[qtype], timeout, r, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TimeToAnswer asks addr for name A until it answers exactly want, and returns how long that
// took from since; ok is false when it did not within patience.
func TimeToAnswer(addr, name string, since time.Time, patience time.Duration, want ...string) (took time.Duration, ok bool, last string) {
	cond := AnswersWith(want...)
	for {
		r, err := Exchange("udp", addr, name, dns.TypeA)
		if err == nil && cond(r) {
			return time.Since(since), true, ""
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("%s %v", dns.RcodeToString[r.Rcode], Addresses(r))
		}
		if time.Since(since) > patience {
			return time.Since(since), false, last
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// HasAnswer holds for a NOERROR reply with an answer.
func HasAnswer(r *dns.Msg) bool { return r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 }

// IsNXDOMAIN holds for an NXDOMAIN reply.
func IsNXDOMAIN(r *dns.Msg) bool { return r.Rcode == dns.RcodeNameError }

// Addresses are the A and AAAA addresses of a reply's answer, sorted.
func Addresses(r *dns.Msg) []string {
	var out []string
	for _, rr := range r.Answer {
		switch a := rr.(type) {
		case *dns.A:
			out = append(out, a.A.String())
		case *dns.AAAA:
			out = append(out, a.AAAA.String())
		}
	}
	sort.Strings(out)
	return out
}

// AnswersWith holds for a NOERROR reply whose addresses are exactly ips (sorted).
func AnswersWith(ips ...string) func(*dns.Msg) bool {
	return func(r *dns.Msg) bool { return r.Rcode == dns.RcodeSuccess && slices.Equal(Addresses(r), ips) }
}

// Section renders RRs order-insensitively; the SOA serial (a clock) is zeroed.
func Section(rrs []dns.RR) []string {
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		rr = dns.Copy(rr)
		if soa, ok := rr.(*dns.SOA); ok {
			soa.Serial = 0
		}
		out = append(out, rr.String())
	}
	sort.Strings(out)
	return out
}

// Render is a reply as a comparable text: flags, rcode and every section.
func Render(r *dns.Msg) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rcode=%s aa=%v tc=%v\n", dns.RcodeToString[r.Rcode], r.Authoritative, r.Truncated)
	for _, s := range []struct {
		name string
		rrs  []dns.RR
	}{{"answer", r.Answer}, {"authority", r.Ns}, {"additional", r.Extra}} {
		fmt.Fprintf(&b, ";; %s\n", s.name)
		for _, l := range Section(s.rrs) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// AXFRText transfers openmcp.cluster from addr: its records (the closing SOA left out), as text.
func AXFRText(t testing.TB, addr string) []string {
	t.Helper()
	m := new(dns.Msg)
	m.SetAxfr("openmcp.cluster.")
	env, err := (&dns.Transfer{ReadTimeout: 10 * time.Second}).In(m, addr)
	if err != nil {
		t.Fatalf("AXFR from %s: %v", addr, err)
	}
	var out []string
	for e := range env {
		if e.Error != nil {
			t.Fatalf("AXFR from %s: %v", addr, e.Error)
		}
		for _, rr := range e.RR {
			out = append(out, strings.ToLower(strings.ReplaceAll(rr.String(), "\t", " ")))
		}
	}
	if len(out) < 2 {
		t.Fatalf("AXFR from %s: %d records", addr, len(out))
	}
	return out[:len(out)-1]
}
