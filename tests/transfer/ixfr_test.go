package transfer

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// xfrFrom sends an AXFR or IXFR question over TCP from the loopback address local and reads the
// transfer as a secondary does (dns.Transfer.In, which verifies TSIG when secret is set).
func xfrFrom(local, addr string, m *dns.Msg, secret map[string]string) ([]dns.RR, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 3 * time.Second}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	tr := &dns.Transfer{Conn: &dns.Conn{Conn: nc}, TsigSecret: secret, ReadTimeout: 10 * time.Second}
	ch, err := tr.In(m, addr)
	if err != nil {
		nc.Close()
		return nil, err
	}
	var rrs []dns.RR
	for env := range ch {
		if env.Error != nil {
			return rrs, env.Error
		}
		rrs = append(rrs, env.RR...)
	}
	return rrs, nil
}

// firstReply sends m over TCP from local, signed with secret if it asks to be, and returns the
// first message of the reply.
func firstReply(t *testing.T, local, addr string, m *dns.Msg, secret map[string]string) *dns.Msg {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 3 * time.Second}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	co := &dns.Conn{Conn: nc, TsigSecret: secret}
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := co.WriteMsg(m); err != nil {
		t.Fatal(err)
	}
	r, err := co.ReadMsg()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ixfr(serial uint32) *dns.Msg {
	m := new(dns.Msg)
	m.SetIxfr("openmcp.cluster.", serial, "ns.dns.openmcp.cluster.", "hostmaster.openmcp.cluster.")
	return m
}

func axfr() *dns.Msg {
	m := new(dns.Msg)
	m.SetAxfr("openmcp.cluster.")
	return m
}

// TestIXFRAndTheAccessListThroughTheStockTransferPlugin runs the binary with the transfer
// plugin allowing 127.0.0.2 only, without and with the tsig plugin requiring signed
// transfers. An IXFR from the current serial (or a newer one) is answered with the SOA alone;
// from an older one, before the server started, with the difference read from etcd's history
// (the names put since); from one that etcd has compacted away with the whole zone, AXFR-style
// (the SOA, every record of an AXFR, the SOA); an AXFR or IXFR from 127.0.0.1, outside `to`, is
// refused, as is an unsigned one when TSIG is required.
func TestIXFRAndTheAccessListThroughTheStockTransferPlugin(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	ctx := context.Background()
	var rev int64
	for i := range 20 {
		put, err := cli.Put(ctx, fmt.Sprintf("/skydns/cluster/openmcp/eu1/app%d/3e6bee2e", i), fmt.Sprintf(`{"host":"203.0.113.%d","ttl":60}`, i+1))
		if err != nil {
			t.Fatal(err)
		}
		rev = put.Header.Revision
	}
	if _, err := cli.Compact(ctx, rev-10); err != nil { // the first 10 names' revisions
		t.Fatal(err)
	}
	const key, secret = "xfr.openmcp.cluster.", "c2VjcmV0LWZvci10aGUtdGVzdA=="
	for _, tc := range []struct {
		name   string
		tsig   string
		secret map[string]string
	}{
		{name: "unsigned"},
		{name: "TSIG required", tsig: fmt.Sprintf("tsig {\n        secret %s %s\n        require AXFR IXFR\n    }", key, secret), secret: map[string]string{key: secret}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := corednsproc.Start(t, "Corefile", fmt.Sprintf(`openmcp.cluster {
    %s
    transfer {
        to 127.0.0.2
    }
    gatewaydns {
        endpoint %s
    }
}`, tc.tsig, etcd.ClientURL))
			e2e.WaitFor(t, 30*time.Second, p.DNS, "app0.eu1.openmcp.cluster.", dns.TypeA, e2e.HasAnswer)
			sign := func(m *dns.Msg) *dns.Msg {
				if tc.secret != nil {
					m.SetTsig(key, dns.HmacSHA256, 300, time.Now().Unix())
				}
				return m
			}
			full, err := xfrFrom("127.0.0.2", p.DNS, sign(axfr()), tc.secret)
			if err != nil {
				t.Fatalf("AXFR: %v", err)
			}
			soa, ok := full[0].(*dns.SOA)
			if !ok || int64(soa.Serial) != rev || len(full) < 20 {
				t.Fatalf("AXFR: %d records, first %v; want the SOA at serial %d first", len(full), full[0], rev)
			}

			for _, serial := range []uint32{soa.Serial, soa.Serial + 1} {
				rrs, err := xfrFrom("127.0.0.2", p.DNS, sign(ixfr(serial)), tc.secret)
				if err != nil {
					t.Fatalf("IXFR from %d: %v", serial, err)
				}
				if len(rrs) != 1 || rrs[0].(*dns.SOA).Serial != soa.Serial {
					t.Errorf("IXFR from %d (current %d): %v, want the SOA alone", serial, soa.Serial, rrs)
				}
			}
			older, err := xfrFrom("127.0.0.2", p.DNS, sign(ixfr(soa.Serial-5)), tc.secret)
			if err != nil {
				t.Fatalf("IXFR from an older serial: %v", err)
			}
			if old, ok := older[min(1, len(older)-1)].(*dns.SOA); len(older) != 4+5 || !ok || old.Serial != soa.Serial-5 {
				t.Errorf("IXFR from %d, 5 names back: %v; want the difference, the 5 names put since between 4 SOAs", soa.Serial-5, older)
			}
			compacted, err := xfrFrom("127.0.0.2", p.DNS, sign(ixfr(soa.Serial-15)), tc.secret)
			if err != nil {
				t.Fatalf("IXFR from a compacted serial: %v", err)
			}
			if got, want := xfrShape(compacted), xfrShape(full); !slices.Equal(got, want) {
				t.Errorf("IXFR from %d, compacted: %d records, want the AXFR's %d, the SOA first and last:\n got %v\nwant %v", soa.Serial-15, len(got), len(want), got, want)
			}

			for _, m := range []*dns.Msg{axfr(), ixfr(soa.Serial - 5)} {
				q := dns.TypeToString[m.Question[0].Qtype]
				if r := firstReply(t, "127.0.0.1", p.DNS, sign(m), tc.secret); r.Rcode != dns.RcodeRefused || len(r.Answer) > 0 {
					t.Errorf("%s from 127.0.0.1, outside `to`: rcode %s with %d records, want REFUSED", q, dns.RcodeToString[r.Rcode], len(r.Answer))
				}
				if tc.secret == nil {
					continue
				}
				m.Extra = nil
				if r := firstReply(t, "127.0.0.2", p.DNS, m, nil); r.Rcode != dns.RcodeRefused || len(r.Answer) > 0 {
					t.Errorf("unsigned %s with TSIG required: rcode %s with %d records, want REFUSED", q, dns.RcodeToString[r.Rcode], len(r.Answer))
				}
			}
		})
	}
}

// xfrShape renders a transfer as its first record, its last, and the others sorted (a
// transfer's order of names is not fixed).
func xfrShape(rrs []dns.RR) []string {
	out := make([]string, len(rrs))
	for i, rr := range rrs {
		out[i] = rr.String()
	}
	if len(out) > 2 {
		slices.Sort(out[1 : len(out)-1])
	}
	return out
}
