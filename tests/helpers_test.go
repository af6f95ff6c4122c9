// Package tests holds the integration and end-to-end tests: real etcd, real kube-apiserver,
// CoreDNS servers answering real DNS over UDP and TCP.
package tests

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	corednstest "github.com/coredns/coredns/test"
	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"

	_ "github.com/gatewaydns/gatewaydns/cmd/coredns/plugins" // the binary's plugin chain
	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
)

// freePort returns a loopback port that is free for both UDP and TCP right now.
func freePort(t testing.TB) int { return corednsproc.FreePort(t) }

// startCoreDNS runs a Corefile in this process, as the binary would, and stops it at cleanup.
func startCoreDNS(t testing.TB, corefile string) *caddy.Instance {
	t.Helper()
	inst, err := corednstest.CoreDNSServer(corefile)
	if err != nil {
		t.Fatalf("starting CoreDNS: %v\n%s", err, corefile)
	}
	t.Cleanup(func() {
		inst.Stop()
		for _, err := range inst.ShutdownCallbacks() {
			t.Errorf("shutting CoreDNS down: %v", err)
		}
	})
	return inst
}

func exchange(netw, addr, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: netw, Timeout: 3 * time.Second}
	r, _, err := c.Exchange(m, addr)
	return r, err
}

// putInTxns writes ops to etcd in transactions of etcd's default most operations (128).
func putInTxns(t testing.TB, cli *clientv3.Client, ops []clientv3.Op) {
	t.Helper()
	for len(ops) > 0 {
		batch := ops[:min(128, len(ops))]
		ops = ops[len(batch):]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cli.Txn(ctx).Then(batch...).Commit()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// ask sends one question over net ("udp" or "tcp") and returns the reply.
func ask(t testing.TB, netw, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	var lastErr error
	for range 3 {
		r, err := exchange(netw, addr, name, qtype)
		if err == nil {
			return r
		}
		lastErr = err
	}
	t.Fatalf("%s %s %s over %s: %v", addr, name, dns.TypeToString[qtype], netw, lastErr)
	return nil
}

// waitFor asks until cond holds for the reply, or fails after timeout. A server that does not
// answer yet (still starting) counts as the condition not holding.
func waitFor(t testing.TB, timeout time.Duration, addr, name string, qtype uint16, cond func(*dns.Msg) bool) *dns.Msg {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r, err := exchange("udp", addr, name, qtype)
		if err == nil && cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s: condition not met within %s; last reply: %v (error %v)", name, dns.TypeToString[qtype], timeout, r, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func hasAnswer(r *dns.Msg) bool { return r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 }

// section renders RRs order-insensitively; the SOA serial (a clock) is zeroed.
func section(rrs []dns.RR) []string {
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

// render is a reply as a comparable text: flags, rcode and every section.
func render(r *dns.Msg) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rcode=%s aa=%v tc=%v\n", dns.RcodeToString[r.Rcode], r.Authoritative, r.Truncated)
	for _, s := range []struct {
		name string
		rrs  []dns.RR
	}{{"answer", r.Answer}, {"authority", r.Ns}, {"additional", r.Extra}} {
		fmt.Fprintf(&b, ";; %s\n", s.name)
		for _, l := range section(s.rrs) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
