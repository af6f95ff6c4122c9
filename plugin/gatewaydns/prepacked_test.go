package gatewaydns

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/prepacked"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// wireWriter is the bottom of a server's writer: what reaches the client, in wire form. A
// reply written as a message is packed as miekg/dns packs it.
type wireWriter struct {
	remote net.Addr
	out    []byte
	packed bool // the last reply was written as bytes
}

func (w *wireWriter) LocalAddr() net.Addr  { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53} }
func (w *wireWriter) RemoteAddr() net.Addr { return w.remote }
func (w *wireWriter) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	w.out, w.packed = b, false
	return err
}
func (w *wireWriter) Write(b []byte) (int, error) {
	w.out, w.packed = append([]byte(nil), b...), true
	return len(b), nil
}
func (w *wireWriter) Close() error        { return nil }
func (w *wireWriter) TsigStatus() error   { return nil }
func (w *wireWriter) TsigTimersOnly(bool) {}
func (w *wireWriter) Hijack()             {}

// serveWire is the reply g sends to r over a client at remote, as the server sends it (its
// ScrubWriter fitting it to the client), in wire form; packed tells whether it was written as
// packed bytes.
func serveWire(t *testing.T, g *GatewayDNS, r *dns.Msg, remote net.Addr) (out []byte, packed bool) {
	t.Helper()
	ww := &wireWriter{remote: remote}
	r = r.Copy() // the writer changes the request's OPT record: each question gets its own
	g.ServeDNS(context.Background(), request.NewScrubWriter(r, ww), r)
	if ww.out == nil {
		t.Fatalf("%s %s: no reply", r.Question[0].Name, dns.TypeToString[r.Question[0].Qtype])
	}
	return ww.out, ww.packed
}

// variedZone is a zone of every kind of name the handler answers: plain addresses and text
// (which keep packed replies), names that do not (CNAMEs, SRV and MX targets by name, leases,
// stored wildcards, subtrees with those), and replies that outgrow a client's size.
func variedZone() []record.KV {
	var kvs []record.KV
	put := func(key, value string) {
		kvs = append(kvs, record.KV{Key: "/skydns/test/zone/" + key, Value: []byte(value)})
	}
	put("app/3e6bee2e", `{"host":"10.0.0.1"}`)
	put("app/9a0c11f0", `{"host":"2001:db8::1","ttl":60}`)
	put("dups/1", `{"host":"10.0.0.2"}`)
	put("dups/2", `{"host":"10.0.0.2"}`)
	put("dups/3", `{"host":"10.0.0.3","ttl":30}`)
	put("own", `{"host":"10.0.0.4","ttl":120}`)
	put("txt/1", `{"text":"v=spf1 -all"}`)
	put("txt/2", `{"text":"`+strings.Repeat("t", 300)+`"}`)
	put("both/1", `{"host":"10.0.0.5","text":"both"}`)
	put("sub/x/1", `{"host":"10.0.1.1"}`)
	put("sub/y/1", `{"host":"10.0.1.2"}`)
	put("sub/y/2", `{"host":"2001:db8::12"}`)
	put("svc/_tcp/_http/1", `{"host":"10.0.5.1","port":8080,"targetstrip":1}`)
	put("svc/_tcp/_http/2", `{"host":"10.0.5.2","port":8080,"weight":300}`)
	put("svc/_tcp/_http/3", `{"host":"10.0.5.3","port":9090,"priority":20}`)
	put("svc/_tcp/_http/4", `{"host":"10.0.5.4","port":-1}`)
	put("svc/_tcp/_named/1", `{"host":"app.zone.test","port":443}`)
	put("mail/1", `{"host":"10.0.6.1","mail":true,"priority":5}`)
	put("mail/2", `{"host":"10.0.6.2"}`)
	put("mailname/1", `{"host":"app.zone.test","mail":true}`)
	put("grp/1", `{"host":"10.0.8.1","group":"g1"}`)
	put("grp/b/1", `{"host":"10.0.8.2","group":"g1"}`)
	put("grp/c/1", `{"host":"10.0.8.3","group":"g2"}`)
	put("alias/1", `{"host":"app.zone.test"}`)
	put("ext/1", `{"host":"www.example.org"}`)
	put("apps/*/k1", `{"host":"10.1.0.1"}`)
	put("deep/a/b/c/d", `{"host":"10.0.0.6"}`)
	put("dns/ns/1", `{"host":"10.0.0.53"}`)
	put("big4/x", `{"host":"10.0.2.1"}`)
	for i := range 40 {
		put(fmt.Sprintf("big/%04d", i), fmt.Sprintf(`{"host":"10.20.%d.%d"}`, i/250, i%250+1))
		put(fmt.Sprintf("big6/%04d", i), fmt.Sprintf(`{"host":"2001:db8:20::%x"}`, i+1))
	}
	return kvs
}

// variedNames are the names asked of variedZone, relative to zone.test.
var variedNames = []string{"app", "dups", "own", "txt", "both", "sub", "sub.x", "y.sub", "_http._tcp.svc", "_named._tcp.svc",
	"svc", "mail", "mailname", "grp", "alias", "ext", "a.apps", "apps", "deep", "a.deep", "d.c.b.a.deep", "big", "big6", "big4",
	"nothere", "x.nothere", "leased", "glued", "*.sub", "any.deep", "ns.dns", "dns"}

// spellings are the ways a client may write a name: the index's lower case, capitals, mixed.
func spellings(name string) []string {
	mixed := []byte(name)
	for i := range mixed {
		if i%2 == 0 && 'a' <= mixed[i] && mixed[i] <= 'z' {
			mixed[i] -= 'a' - 'A'
		}
	}
	return []string{name, strings.ToUpper(name), string(mixed)}
}

// TestAPackedReplyIsTheBytesTheUsualPathWrites asks a handler that keeps packed replies and one
// that does not every name of a varied zone, for every type, in every spelling, with and
// without EDNS (sizes, DO and the other flags), with RD and CD set and not, over UDP (IPv4,
// IPv6) and TCP: each question twice, the second answered from the packed reply the first
// kept where there is one. Every reply is the same bytes as the usual path's; the names that
// keep replies are answered packed.
func TestAPackedReplyIsTheBytesTheUsualPathWrites(t *testing.T) {
	for _, tc := range []struct {
		exact  bool
		writes prepacked.Writes
	}{{false, prepacked.WritesAll}, {true, prepacked.WritesAll}, {false, prepacked.WritesNoErrors}} {
		exact := tc.exact
		t.Run(fmt.Sprintf("exact-names=%t/writes=%d", exact, tc.writes), func(t *testing.T) {
			ix := index.New(index.Options{ExactNames: exact, Now: func() time.Time { return time.Unix(1e9, 0) }})
			kvs := append(variedZone(),
				record.KV{Key: "/skydns/test/zone/leased/1", Value: []byte(`{"host":"10.0.11.1"}`), Lease: 7},
				record.KV{Key: "/skydns/test/zone/glued/1", Value: []byte(`{"host":"10.0.12.1"}`)})
			ix.Load(ix.Root(), kvs)
			ix.SetLeaseExpiry(7, time.Unix(1e9+100, 0))
			plain := answering(ix, []string{"zone.test."})
			plain.apex = answer.NewApex()
			plain.apex.Nameservers = []answer.Nameserver{{Name: "glued.zone.test.", Glue: []net.IP{net.ParseIP("192.0.2.1")}}}
			g := answering(ix, []string{"zone.test."})
			g.apex = plain.apex
			g.packer = prepacked.New("/skydns", g.Zones, g.packedRules(nil))
			g.packer.SetWrites(tc.writes)

			remotes := map[string]net.Addr{
				"udp4": &net.UDPAddr{IP: net.IPv4(10, 1, 1, 1), Port: 4000},
				"udp6": &net.UDPAddr{IP: net.ParseIP("2001:db8::99"), Port: 4000},
				"tcp":  &net.TCPAddr{IP: net.IPv4(10, 1, 1, 1), Port: 4000},
			}
			types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeSRV, dns.TypeMX, dns.TypeCNAME, dns.TypePTR, dns.TypeNS, dns.TypeHINFO, dns.TypeCAA, dns.TypeSOA}
			packedHits := map[string]bool{}
			asked := 0
			for _, rel := range variedNames {
				for _, qtype := range types {
					for _, spelled := range spellings(rel + ".zone.test.") {
						for _, v := range requestVariants() {
							for netw, remote := range remotes {
								r := new(dns.Msg)
								r.SetQuestion(spelled, qtype)
								r.Id = 4242
								v(r)
								want, _ := serveWire(t, plain, r, remote)
								for range 2 {
									got, packed := serveWire(t, g, r, remote)
									asked++
									if !bytes.Equal(got, want) {
										var wm, gm dns.Msg
										_ = wm.Unpack(want)
										_ = gm.Unpack(got)
										t.Fatalf("%s %s over %s (packed %t): the bytes differ\nwant %x\n%v\ngot  %x\n%v", spelled, dns.TypeToString[qtype], netw, packed, want, &wm, got, &gm)
									}
									if packed {
										packedHits[rel+"/"+dns.TypeToString[qtype]] = true
									}
								}
							}
						}
					}
				}
			}
			if tc.writes != prepacked.WritesAll {
				t.Logf("%d questions, %d name/type pairs answered packed", asked, len(packedHits))
				return // NXDOMAIN goes out as a message: only the bytes are compared
			}
			for _, want := range []string{"app/A", "app/AAAA", "app/TXT", "app/SRV", "dups/A", "own/A", "txt/TXT", "txt/A", "both/TXT", "both/A",
				"sub/A", "y.sub/AAAA", "_http._tcp.svc/SRV", "mail/MX", "grp/A", "nothere/A", "x.nothere/AAAA", "app/HINFO", "big4/A"} {
				if !packedHits[want] {
					t.Errorf("%s was never answered packed", want)
				}
			}
			never := []string{"alias/A", "ext/A", "a.apps/A", "leased/A", "glued/A", "_named._tcp.svc/SRV", "mailname/MX", "app/SOA"}
			if !exact {
				// Query wildcards, and a subtree that holds an SRV target by name.
				never = append(never, "*.sub/A", "any.deep/A", "svc/SRV")
			}
			for _, never := range never {
				if packedHits[never] {
					t.Errorf("%s was answered packed: its answers are not its own records'", never)
				}
			}
			t.Logf("%d questions, %d name/type pairs answered packed", asked, len(packedHits))
		})
	}
}

// requestVariants are the flags and EDNS records a question comes with.
func requestVariants() []func(*dns.Msg) {
	opt := func(size uint16, do bool, z uint16) func(*dns.Msg) {
		return func(r *dns.Msg) {
			r.SetEdns0(size, do)
			o := r.IsEdns0()
			o.Hdr.Ttl |= uint32(z)
		}
	}
	return []func(*dns.Msg){
		func(r *dns.Msg) {},
		func(r *dns.Msg) { r.RecursionDesired = false; r.CheckingDisabled = true },
		func(r *dns.Msg) { r.AuthenticatedData = true; r.Zero = true },
		opt(1232, false, 0),
		opt(4096, true, 0),
		opt(512, true, 0x4001), // Z bits, high and low
		opt(100, false, 0),     // below 512: 512
		opt(1400, false, 0),    // above IPv6's 1220, below IPv4's 1480
	}
}
