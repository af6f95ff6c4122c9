package batchrun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/plugin/loadbalance" // its setup, for its handler
	"github.com/miekg/dns"
)

// TestTheBatchedPathReadsTheServersZonesAndOpcodes pins what the path reads of a CoreDNS
// server by reflection, which no release of CoreDNS promises: its zones with their
// configurations, and the opcodes its plugins asked for.
func TestTheBatchedPathReadsTheServersZonesAndOpcodes(t *testing.T) {
	a := &dnsserver.Config{Zone: "a.test.", ListenHosts: []string{""}, Port: "53"}
	b := &dnsserver.Config{Zone: "b.a.test.", ListenHosts: []string{""}, Port: "53"}
	b.AllowOpcode(dns.OpcodeUpdate)
	s, err := dnsserver.NewServer("dns://:53", []*dnsserver.Config{a, b})
	if err != nil {
		t.Fatal(err)
	}
	zones, ok := serverZones(s)
	if !ok {
		t.Fatal("the server's zones cannot be read")
	}
	if len(zones) != 2 || len(zones["a.test."]) != 1 || zones["a.test."][0] != configKey(a) || zones["b.a.test."][0] != configKey(b) {
		t.Fatalf("zones %v", zones)
	}
	if ops := serverOpcodes(s); !ops[dns.OpcodeUpdate] || len(ops) != 1 {
		t.Fatalf("opcodes %v, want UPDATE", ops)
	}
	accept := acceptFor(serverOpcodes(s))
	for _, tc := range []struct {
		opcode, qd int
		want       dns.MsgAcceptAction
	}{
		{dns.OpcodeQuery, 1, dns.MsgAccept},
		{dns.OpcodeUpdate, 1, dns.MsgAccept},
		{dns.OpcodeUpdate, 2, dns.MsgReject},
		{dns.OpcodeStatus, 1, dns.MsgRejectNotImplemented},
	} {
		h := dns.Header{Bits: uint16(tc.opcode) << 11, Qdcount: uint16(tc.qd)}
		if got := accept(h); got != tc.want {
			t.Errorf("opcode %d, %d questions: %v, want %v", tc.opcode, tc.qd, got, tc.want)
		}
	}
}

// TestLoadbalanceRoundRobinLeavesTheBatchedPathOn: with loadbalance's default policy in front,
// which the path's shuffle stands in for, the path may run; with another (weighted), it may not.
func TestLoadbalanceRoundRobinLeavesTheBatchedPathOn(t *testing.T) {
	weights := filepath.Join(t.TempDir(), "weights")
	if err := os.WriteFile(weights, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	setup, err := caddy.DirectiveAction("dns", "loadbalance")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		stanza  string
		shuffle bool
	}{
		{"loadbalance", true},
		{"loadbalance round_robin", true},
		{"loadbalance weighted " + weights, false},
	} {
		c := caddy.NewTestController("dns", tc.stanza)
		if err := setup(c); err != nil {
			t.Fatalf("%s: %v", tc.stanza, err)
		}
		h := dnsserver.GetConfig(c).Plugin[0](nil)
		if got := shufflesOnly(h); got != tc.shuffle {
			t.Errorf("%s: shuffles only %t, want %t", tc.stanza, got, tc.shuffle)
		}
	}
}
