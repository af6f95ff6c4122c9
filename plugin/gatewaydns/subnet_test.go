package gatewaydns

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/test"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/prepacked"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// subnetQuestion is a question for name of qtype with EDNS (size 1232, DO set) and, when ecs
// has a Code, that client subnet option.
func subnetQuestion(name string, qtype uint16, ecs dns.EDNS0_SUBNET) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(1232, true)
	if ecs.Code != 0 {
		m.IsEdns0().Option = append(m.IsEdns0().Option, &ecs)
	}
	return m
}

func subnetOpt(family uint16, addr string, source, scope uint8) dns.EDNS0_SUBNET {
	a := net.ParseIP(addr)
	if family == 1 {
		a = a.To4()
	}
	return dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: family, SourceNetmask: source, SourceScope: scope, Address: a}
}

// askThroughScrub asks h as CoreDNS's server does (request.ScrubWriter in front, the rcodes
// that the server writes written so) and returns the reply the client gets.
func askThroughScrub(t *testing.T, h plugin.Handler, from string, req *dns.Msg) *dns.Msg {
	t.Helper()
	rec := &bytesOrMsg{ResponseWriter: &test.ResponseWriter{RemoteIP: from}}
	w := request.NewScrubWriter(req, rec)
	rcode, err := h.ServeDNS(context.Background(), w, req)
	if err != nil {
		t.Fatal(err)
	}
	if rec.bytes != nil {
		t.Fatal("a question with a client subnet option was answered from a packed reply")
	}
	if !plugin.ClientWrite(rcode) {
		if rec.msg != nil {
			t.Fatalf("rcode %s returned, and a reply written too", dns.RcodeToString[rcode])
		}
		m := new(dns.Msg)
		m.SetRcode(req, rcode)
		w.WriteMsg(m) // as dnsserver's errorFunc
	}
	if rec.msg == nil {
		t.Fatal("no reply")
	}
	return rec.msg
}

// replyECS is the reply's client subnet options, and its OPT records.
func replyECS(m *dns.Msg) (ecs []*dns.EDNS0_SUBNET, opts int) {
	for _, rr := range m.Extra {
		if o, ok := rr.(*dns.OPT); ok {
			opts++
			for _, e := range o.Option {
				if s, ok := e.(*dns.EDNS0_SUBNET); ok {
					ecs = append(ecs, s)
				}
			}
		}
	}
	return ecs, opts
}

func answerAddrs(m *dns.Msg) string {
	var out []string
	for _, rr := range m.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// TestRepliesEchoTheClientSubnetWithTheScopeOfTheAnswer: a question with EDNS Client Subnet
// (RFC 7871) gets the option back, once, as asked but its scope: for an answer chosen by the
// client's place, the prefix every address of which is placed alike (a cluster's network, the
// part of it another network is not in, the part of the address space no network is in); for
// every other answer, 0. A malformed option is FORMERR, and no option asked is none answered.
func TestRepliesEchoTheClientSubnetWithTheScopeOfTheAnswer(t *testing.T) {
	owned := func(name, owner, host string) record.KV {
		return record.KV{Key: record.Key(record.DefaultPrefix, name, owner, host), Value: []byte(fmt.Sprintf(`{"host":%q,"owner":%q}`, host, owner))}
	}
	kvs := []record.KV{
		owned("app.example.org", "eu1", "10.0.1.1"), owned("app.example.org", "us1", "10.0.2.1"),
		owned("plain.example.org", "eu1", "10.0.3.1"),
		steered("canary.example.org", "eu1", "10.0.4.1", `{"weight":90}`), steered("canary.example.org", "us1", "10.0.4.2", `{"weight":10}`),
	}
	local := loadedStanza(t, "gatewaydns example.org {\n explain\n locality-cluster us1 10.240.0.0/16\n locality-cluster eu1 10.240.200.0/24\n}", kvs)
	noLocality := loadedStanza(t, "gatewaydns example.org", kvs)
	for _, g := range []*GatewayDNS{local, noLocality} {
		g.packer.SetWrites(prepacked.WritesAll) // a question with the option must not be packed
	}
	chaos := func(m *dns.Msg) *dns.Msg { m.Question[0].Qclass = dns.ClassCHAOS; return m }
	const none = -1
	for _, tc := range []struct {
		behaviour string
		g         *GatewayDNS
		req       *dns.Msg
		rcode     int
		answer    string
		scope     int    // none: no option in the reply
		from      string // the asking server's address; 127.0.0.1 when empty
	}{
		{"chosen by place, a client of us1's network: the part of it eu1's is not in", local,
			subnetQuestion("app.example.org.", dns.TypeA, subnetOpt(1, "10.240.7.0", 24, 0)), dns.RcodeSuccess, "10.0.2.1", 17, ""},
		{"chosen by place, a client of eu1's network inside us1's: eu1's network", local,
			subnetQuestion("app.example.org.", dns.TypeA, subnetOpt(1, "10.240.200.0", 24, 0)), dns.RcodeSuccess, "10.0.1.1", 24, ""},
		{"chosen by place, a client placed nowhere: the part of the address space no network is in", local,
			subnetQuestion("app.example.org.", dns.TypeA, subnetOpt(1, "192.0.2.0", 24, 0)), dns.RcodeSuccess, "10.0.1.1,10.0.2.1", 1, ""},
		{"chosen by place, IPv6 with IPv4 networks only: placed nowhere, as any IPv6 client", local,
			subnetQuestion("app.example.org.", dns.TypeA, subnetOpt(2, "2001:db8::", 56, 0)), dns.RcodeSuccess, "10.0.1.1,10.0.2.1", 0, ""},
		{"source prefix 0: placed by the asking server's address, for any client it asks for", local,
			subnetQuestion("app.example.org.", dns.TypeA, subnetOpt(1, "0.0.0.0", 0, 0)), dns.RcodeSuccess, "10.0.2.1", 0, "10.240.7.9"},
		{"a name of one owner: any client", local,
			subnetQuestion("plain.example.org.", dns.TypeA, subnetOpt(1, "10.240.7.0", 24, 0)), dns.RcodeSuccess, "10.0.3.1", 0, ""},
		{"NXDOMAIN: any client", local,
			subnetQuestion("nothere.example.org.", dns.TypeA, subnetOpt(1, "10.240.7.0", 24, 0)), dns.RcodeNameError, "", 0, ""},
		{"the apex's SOA: any client", local,
			subnetQuestion("example.org.", dns.TypeSOA, subnetOpt(1, "10.240.7.0", 24, 0)), dns.RcodeSuccess, "", 0, ""},
		{"explain of a name chosen by place: its scope", local,
			chaos(subnetQuestion("app.example.org.", dns.TypeTXT, subnetOpt(1, "10.240.7.0", 24, 0))), dns.RcodeSuccess, "", 17, ""},
		{"weights without locality: drawn, not placed, any client", noLocality,
			subnetQuestion("canary.example.org.", dns.TypeA, subnetOpt(1, "10.240.7.0", 24, 0)), dns.RcodeSuccess, "", 0, ""},
		{"no locality, a name of two owners: the union, any client", noLocality,
			subnetQuestion("app.example.org.", dns.TypeA, subnetOpt(1, "10.240.7.0", 24, 0)), dns.RcodeSuccess, "10.0.1.1,10.0.2.1", 0, ""},
		{"no option asked: none answered", local,
			subnetQuestion("app.example.org.", dns.TypeA, dns.EDNS0_SUBNET{}), dns.RcodeSuccess, "10.0.1.1,10.0.2.1", none, ""},
		{"a scope in the question: FORMERR", local,
			subnetQuestion("app.example.org.", dns.TypeA, subnetOpt(1, "10.240.7.0", 24, 24)), dns.RcodeFormatError, "", none, ""},
		{"address bits beyond the source prefix: FORMERR", local,
			subnetQuestion("app.example.org.", dns.TypeA, subnetOpt(1, "10.240.7.9", 24, 0)), dns.RcodeFormatError, "", none, ""},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			asked, _ := replyECS(tc.req)
			from := tc.from
			if from == "" {
				from = "127.0.0.1"
			}
			r := askThroughScrub(t, tc.g, from, tc.req.Copy())
			if r.Rcode != tc.rcode || tc.answer != "" && answerAddrs(r) != tc.answer {
				t.Fatalf("rcode %s, answer %q; want %s, %q", dns.RcodeToString[r.Rcode], answerAddrs(r), dns.RcodeToString[tc.rcode], tc.answer)
			}
			ecs, opts := replyECS(r)
			if opts != 1 || !r.IsEdns0().Do() || r.IsEdns0().UDPSize() != 1232 {
				t.Fatalf("%d OPT records, DO %v, size %d: want one, with the question's DO bit and size", opts, r.IsEdns0() != nil && r.IsEdns0().Do(), r.IsEdns0().UDPSize())
			}
			if tc.scope == none {
				if len(ecs) != 0 {
					t.Fatalf("reply carries %v, want no client subnet option", ecs)
				}
				return
			}
			if len(ecs) != 1 {
				t.Fatalf("reply carries %d client subnet options, want 1", len(ecs))
			}
			q, e := asked[0], ecs[0]
			if e.Family != q.Family || e.SourceNetmask != q.SourceNetmask || !e.Address.Equal(q.Address) || int(e.SourceScope) != tc.scope {
				t.Fatalf("reply's option %s (family %d), want the question's %s with scope %d", e, e.Family, q, tc.scope)
			}
		})
	}
	t.Run("over TCP too", func(t *testing.T) {
		req := subnetQuestion("app.example.org.", dns.TypeA, subnetOpt(1, "10.240.7.0", 24, 0))
		rec := &bytesOrMsg{ResponseWriter: &test.ResponseWriter{RemoteIP: "127.0.0.1", TCP: true}}
		if _, err := local.ServeDNS(context.Background(), request.NewScrubWriter(req, rec), req); err != nil || rec.msg == nil {
			t.Fatal(err)
		}
		if ecs, _ := replyECS(rec.msg); len(ecs) != 1 || ecs[0].SourceScope != 17 {
			t.Fatalf("over TCP: %v, want the option with scope 17", ecs)
		}
	})
}

// TestFallthroughHandsTheQuestionOnAsItCame: a name the stanza does not have goes to the next
// plugin with the writer the stanza got, so a reply the next plugin makes (forward's, with its
// upstream's option) is not given a second client subnet option.
func TestFallthroughHandsTheQuestionOnAsItCame(t *testing.T) {
	g := loadedStanza(t, "gatewaydns example.org {\n fallthrough\n locality-cluster us1 10.240.0.0/16\n}", nil)
	upstream := subnetOpt(1, "10.240.7.0", 24, 12)
	g.Next = plugin.HandlerFunc(func(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.SetEdns0(1232, false)
		m.IsEdns0().Option = []dns.EDNS0{&upstream}
		return dns.RcodeSuccess, w.WriteMsg(m)
	})
	r := askThroughScrub(t, g, "127.0.0.1", subnetQuestion("nothere.example.org.", dns.TypeA, subnetOpt(1, "10.240.7.0", 24, 0)))
	if ecs, opts := replyECS(r); opts != 1 || len(ecs) != 1 || ecs[0].SourceScope != 12 {
		t.Fatalf("%d OPT records, options %v: want the next plugin's alone", opts, ecs)
	}
}
