package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/dnscheck"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// differentialRecords covers every row of shared/spec/records.md: name -> values, each put at
// "<key of name>/<suffix>" (or at the name's own key when the suffix is empty).
var differentialRecords = []struct {
	name, suffix, value string
}{
	// A, AAAA, de-duplication, subtree aggregation.
	{"a.skydns.test.", "3e6bee2e", `{"host":"10.0.0.1"}`},
	{"a.skydns.test.", "9a0c11f0", `{"host":"10.0.0.2","ttl":60}`},
	{"a.skydns.test.", "dup00001", `{"host":"10.0.0.1"}`},
	{"v6.skydns.test.", "1", `{"host":"2001:db8::1"}`},
	{"v6.skydns.test.", "2", `{"host":"2001:db8::2"}`},
	{"dual.skydns.test.", "1", `{"host":"10.0.1.1"}`},
	{"dual.skydns.test.", "2", `{"host":"2001:db8::11"}`},
	{"own.skydns.test.", "", `{"host":"10.0.2.1","ttl":120}`},
	{"x.sub.skydns.test.", "1", `{"host":"10.0.3.1"}`},
	{"y.sub.skydns.test.", "1", `{"host":"10.0.3.2"}`},
	{"z.deep.sub.skydns.test.", "1", `{"host":"10.0.3.3"}`},
	// CNAME: in-zone chase, chains, loops, out-of-zone targets through upstream.
	{"alias.skydns.test.", "1", `{"host":"a.skydns.test"}`},
	{"alias2.skydns.test.", "1", `{"host":"alias.skydns.test"}`},
	{"alias6.skydns.test.", "1", `{"host":"v6.skydns.test"}`},
	{"loop1.skydns.test.", "1", `{"host":"loop2.skydns.test"}`},
	{"loop2.skydns.test.", "1", `{"host":"loop1.skydns.test"}`},
	{"self.skydns.test.", "1", `{"host":"self.skydns.test"}`},
	{"dangling.skydns.test.", "1", `{"host":"missing.skydns.test"}`},
	{"ext.skydns.test.", "1", `{"host":"web.example.net"}`},
	{"extmissing.skydns.test.", "1", `{"host":"nothing.example.net"}`},
	{"exact.skydns.test.", "", `{"host":"a.skydns.test"}`},
	{"exactip.skydns.test.", "", `{"host":"10.0.4.1"}`},
	// SRV with glue, weights, priorities, port -1, targetstrip.
	{"_http._tcp.svc.skydns.test.", "1", `{"host":"10.0.5.1","port":8080,"targetstrip":1}`},
	{"_http._tcp.svc.skydns.test.", "2", `{"host":"10.0.5.2","port":8080,"weight":300}`},
	{"_http._tcp.svc.skydns.test.", "3", `{"host":"10.0.5.3","port":9090,"priority":20}`},
	{"_http._tcp.svc.skydns.test.", "4", `{"host":"10.0.5.4","port":-1}`},
	{"_named._tcp.svc.skydns.test.", "1", `{"host":"a.skydns.test","port":443}`},
	{"_ext._tcp.svc.skydns.test.", "1", `{"host":"web.example.net","port":443}`},
	// MX.
	{"mail.skydns.test.", "1", `{"host":"10.0.6.1","mail":true,"priority":5}`},
	{"mail.skydns.test.", "2", `{"host":"mx.example.net","mail":true,"priority":10}`},
	{"mail.skydns.test.", "3", `{"host":"10.0.6.3"}`},
	// TXT, long TXT, host+text is TXT only, TXT through a CNAME.
	{"txt.skydns.test.", "1", `{"text":"v=spf1 -all"}`},
	{"txt.skydns.test.", "2", `{"text":"` + strings.Repeat("t", 600) + `"}`},
	{"txtandhost.skydns.test.", "1", `{"host":"10.0.7.1","text":"both"}`},
	{"txtalias.skydns.test.", "1", `{"host":"txt.skydns.test"}`},
	// group.
	{"grp.skydns.test.", "", `{"host":"10.0.8.1","group":"g1"}`},
	{"b.grp.skydns.test.", "1", `{"host":"10.0.8.2","group":"g1"}`},
	{"c.grp.skydns.test.", "1", `{"host":"10.0.8.3","group":"g2"}`},
	{"d.grp.skydns.test.", "1", `{"host":"10.0.8.4"}`},
	{"e.grp2.skydns.test.", "1", `{"host":"10.0.8.5","group":"g1"}`},
	{"f.grp2.skydns.test.", "1", `{"host":"10.0.8.6","group":"g2"}`},
	// Query wildcards.
	{"w.r1.skydns.test.", "1", `{"host":"10.0.9.1"}`},
	{"w.r2.skydns.test.", "1", `{"host":"10.0.9.2"}`},
	{"v.r2.skydns.test.", "1", `{"host":"10.0.9.3"}`},
	// NS and apex.
	{"a.ns.dns.skydns.test.", "", `{"host":"10.0.10.1"}`},
	{"b.ns.dns.skydns.test.", "", `{"host":"10.0.10.2"}`},
	// The stock plugin's own targetstrip NS case (plugin/etcd lookup_test.go): NS c.ns.dns.
	{"ns1.c.ns.dns.skydns.test.", "", `{"host":"10.0.10.4","targetstrip":1}`},
	{"ns2.c.ns.dns.skydns.test.", "", `{"host":"10.0.10.5","targetstrip":1}`},
	{"apex.dns.skydns.test.", "", `{"host":"10.0.10.3"}`},
	// PTR.
	{"1.0.0.10.in-addr.arpa.", "", `{"host":"ptr.skydns.test"}`},
	{"2.0.0.10.in-addr.arpa.", "", `{"host":"10.0.0.2"}`},
}

const leasedName = "leased.skydns.test."

// bigRecords makes an answer larger than a UDP reply, to compare truncation.
func bigRecords() map[string]string {
	m := map[string]string{}
	for i := range 60 {
		m[fmt.Sprintf("%s/%04d", msg.Path("big.skydns.test.", "skydns"), i)] = fmt.Sprintf(`{"host":"10.20.%d.%d"}`, i/250, i%250+1)
	}
	return m
}

// hugeRecords are the names of the zone huge.test, whose reads span more records than the
// index answers a question from (index.DefaultMaxRecords, 4096): many.huge.test has 5000
// records with distinct addresses, more than a 64 KiB message holds, so both plugins send the
// first of them with TC; dups.huge.test has 4097 records, the first 4096 with one address, the
// last with another, which the stock plugin reads and gatewaydns does not (cutRead).
func hugeRecords() []clientv3.Op {
	var ops []clientv3.Op
	for i := range 5000 {
		ops = append(ops, clientv3.OpPut(fmt.Sprintf("%s/%04d", msg.Path("many.huge.test.", "skydns"), i),
			fmt.Sprintf(`{"host":"10.30.%d.%d"}`, i/250, i%250+1)))
	}
	for i := range 4097 {
		host := "10.31.0.1"
		if i == 4096 {
			host = "10.31.0.2"
		}
		ops = append(ops, clientv3.OpPut(fmt.Sprintf("%s/%04d", msg.Path("dups.huge.test.", "skydns"), i), fmt.Sprintf(`{"host":%q}`, host)))
	}
	return ops
}

func putDifferentialRecords(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	ctx := context.Background()
	e2e.PutInTxns(t, cli, hugeRecords())
	for _, r := range differentialRecords {
		key := msg.Path(r.name, "skydns")
		if r.suffix != "" {
			key += "/" + r.suffix
		}
		if _, err := cli.Put(ctx, key, r.value); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range bigRecords() {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	lease, err := cli.Grant(ctx, leaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, msg.Path(leasedName, "skydns")+"/1", `{"host":"10.0.11.1"}`, clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, msg.Path(leasedName, "skydns")+"/2", `{"host":"10.0.11.2","ttl":90}`, clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
}

// differentialCorefile serves the same zones from the stock etcd plugin on one port and from
// gatewaydns on another; example.net, the zone of the out-of-zone CNAME targets, is answered
// by hosts on both, so that upstream lookups go through the server's own chain.
func differentialCorefile(plugin, endpoint string, port int) string {
	return fmt.Sprintf(`skydns.test:%[3]d 10.in-addr.arpa:%[3]d huge.test:%[3]d {
    %[1]s skydns.test 10.in-addr.arpa huge.test {
        endpoint %[2]s
    }
}
example.net:%[3]d {
    hosts {
        192.0.2.80 web.example.net
        192.0.2.25 mx.example.net
        2001:db8:80::1 web.example.net
    }
}
`, plugin, endpoint, port)
}

type differentialCase struct {
	name  string
	qtype uint16
}

func differentialCases() []differentialCase {
	names := []string{
		"a.skydns.test.", "A.SkyDNS.test.", "v6.skydns.test.", "dual.skydns.test.", "own.skydns.test.",
		"sub.skydns.test.", "x.sub.skydns.test.", "deep.sub.skydns.test.",
		"alias.skydns.test.", "alias2.skydns.test.", "alias6.skydns.test.", "loop1.skydns.test.",
		"self.skydns.test.", "dangling.skydns.test.", "ext.skydns.test.", "extmissing.skydns.test.",
		"_http._tcp.svc.skydns.test.", "_named._tcp.svc.skydns.test.", "_ext._tcp.svc.skydns.test.",
		"svc.skydns.test.", "mail.skydns.test.", "txt.skydns.test.", "txtandhost.skydns.test.",
		"txtalias.skydns.test.", "grp.skydns.test.", "grp2.skydns.test.",
		"*.r2.skydns.test.", "w.*.skydns.test.", "w.any.skydns.test.", "*.sub.skydns.test.",
		"skydns.test.", "nothere.skydns.test.", "x.nothere.skydns.test.", leasedName,
		"exactip.skydns.test.",
	}
	var cases []differentialCase
	for _, n := range names {
		for _, q := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeSRV, dns.TypeTXT, dns.TypeMX} {
			cases = append(cases, differentialCase{n, q})
		}
	}
	return append(cases,
		differentialCase{"skydns.test.", dns.TypeNS},
		differentialCase{"c.ns.dns.skydns.test.", dns.TypeA},
		differentialCase{"skydns.test.", dns.TypeSOA},
		differentialCase{"a.skydns.test.", dns.TypeNS},
		differentialCase{"a.skydns.test.", dns.TypeSOA},
		differentialCase{"a.skydns.test.", dns.TypeHINFO},
		differentialCase{"nothere.skydns.test.", dns.TypeHINFO},
		differentialCase{"exact.skydns.test.", dns.TypeCNAME},
		differentialCase{"exactip.skydns.test.", dns.TypeCNAME},
		differentialCase{"1.0.0.10.in-addr.arpa.", dns.TypePTR},
		differentialCase{"2.0.0.10.in-addr.arpa.", dns.TypePTR},
		differentialCase{"9.0.0.10.in-addr.arpa.", dns.TypePTR},
		differentialCase{"big.skydns.test.", dns.TypeA},
		differentialCase{"many.huge.test.", dns.TypeA},
		differentialCase{"many.huge.test.", dns.TypeAAAA},
		differentialCase{"*.many.huge.test.", dns.TypeA},
		differentialCase{"dups.huge.test.", dns.TypeA},
	)
}

// TestDifferentialAgainstStockEtcdPlugin runs the stock etcd plugin and gatewaydns over the
// same etcd and the same records and asserts identical replies, over UDP and TCP.
func TestDifferentialAgainstStockEtcdPlugin(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	putDifferentialRecords(t, etcd.Client(t))

	stockPort, ourPort := corednsproc.FreePort(t), corednsproc.FreePort(t)
	e2e.StartCoreDNS(t, differentialCorefile("etcd", etcd.ClientURL, stockPort)+differentialCorefile("gatewaydns", etcd.ClientURL, ourPort))
	stock := fmt.Sprintf("127.0.0.1:%d", stockPort)
	ours := fmt.Sprintf("127.0.0.1:%d", ourPort)

	e2e.WaitFor(t, 10*time.Second, ours, "a.skydns.test.", dns.TypeA, e2e.HasAnswer)
	// The index learns a lease's remaining life right after loading; wait until it has.
	e2e.WaitFor(t, 10*time.Second, ours, leasedName, dns.TypeA, func(r *dns.Msg) bool {
		return e2e.HasAnswer(r) && r.Answer[0].Header().Ttl > leaseTTL-60
	})

	cases := differentialCases()
	if len(cases) < 80 {
		t.Fatalf("only %d cases; the acceptance asks for at least 80", len(cases))
	}
	var answered, nxdomain, nodata int
	for _, tc := range cases {
		for _, netw := range []string{"udp", "tcp"} {
			t.Run(fmt.Sprintf("%s/%s/%s", tc.name, dns.TypeToString[tc.qtype], netw), func(t *testing.T) {
				want := e2e.Ask(t, netw, stock, tc.name, tc.qtype)
				got := e2e.Ask(t, netw, ours, tc.name, tc.qtype)
				if want.Rcode == dns.RcodeServerFailure {
					t.Fatalf("the stock plugin failed; the fixture must not make it fail:\n%v", want)
				}
				alignLeaseTTLs(t, want, got)
				if cnameRuled[fmt.Sprintf("%s/%s", tc.name, dns.TypeToString[tc.qtype])] {
					checkCNAMERuled(t, tc.name, want, got)
					return
				}
				if cutRead[fmt.Sprintf("%s/%s", tc.name, dns.TypeToString[tc.qtype])] {
					checkCutRead(t, want, got)
					return
				}
				if w, g := e2e.Render(want), e2e.Render(got); w != g {
					t.Fatalf("replies differ\n--- stock etcd plugin\n%s--- gatewaydns\n%s", w, g)
				}
				// Asked again: answered from the reply the first question kept packed, where
				// the name keeps one (by the batched UDP path over UDP).
				again := e2e.Ask(t, netw, ours, tc.name, tc.qtype)
				alignLeaseTTLs(t, want, again)
				if w, g := e2e.Render(want), e2e.Render(again); w != g {
					t.Fatalf("replies differ when asked again\n--- stock etcd plugin\n%s--- gatewaydns\n%s", w, g)
				}
				if netw == "udp" {
					switch {
					case len(want.Answer) > 0:
						answered++
					case want.Rcode == dns.RcodeNameError:
						nxdomain++
					default:
						nodata++
					}
				}
			})
		}
	}
	// A fixture where everything fails the same way would compare equal: make sure the cases
	// exercise answers, name errors and empty answers alike.
	if answered < 40 || nxdomain < 10 || nodata < 10 {
		t.Fatalf("cases are lopsided: %d answered, %d NXDOMAIN, %d NODATA", answered, nxdomain, nodata)
	}
	t.Logf("%d cases: %d answered, %d NXDOMAIN, %d NODATA, each over UDP and TCP", len(cases), answered, nxdomain, nodata)
}

// leaseTTL is the life of the fixture's lease; a leased record's TTL counts down from it.
const leaseTTL = 3600

// alignLeaseTTLs lets leased records' TTLs differ by the second or two that passes between the
// two queries, in every section, then copies the stock TTLs over for the exact comparison.
// Every other TTL must match exactly.
func alignLeaseTTLs(t *testing.T, want, got *dns.Msg) {
	t.Helper()
	stockTTL := map[string]uint32{}
	for _, rrs := range [][]dns.RR{want.Answer, want.Ns, want.Extra} {
		for _, rr := range rrs {
			stockTTL[withoutTTL(rr)] = rr.Header().Ttl
		}
	}
	for _, rrs := range [][]dns.RR{got.Answer, got.Ns, got.Extra} {
		for _, rr := range rrs {
			w, ok := stockTTL[withoutTTL(rr)]
			if !ok || w <= leaseTTL-60 || w > leaseTTL {
				continue
			}
			if d := int64(w) - int64(rr.Header().Ttl); d > 2 || d < -2 {
				t.Fatalf("leased TTL %d differs from the stock %d: %v", rr.Header().Ttl, w, rr)
			}
			rr.Header().Ttl = w
		}
	}
}

func withoutTTL(rr dns.RR) string {
	rr = dns.Copy(rr)
	rr.Header().Ttl = 0
	return rr.String()
}

// cnameRuled are the one deliberate difference from the stock plugin: questions whose records
// mix host names (CNAMEs) with addresses (A, AAAA) or text (TXT), or hold CNAMEs to different
// targets, where the stock answer is a CNAME beside other data (invalid DNS), two CNAMEs, or a
// CNAME for a name that cannot be one. In the fixture the addresses are older than the host
// names, so the CNAME rule answers A and AAAA from the addresses alone. An MX or SRV target
// (a host name with "mail" or a port) is no CNAME: beside other data the stock plugin still
// answers it to A and TXT questions as one, gatewaydns leaves it out (mail.skydns.test./TXT).
var cnameRuled = map[string]bool{
	"mail.skydns.test./A": true, "mail.skydns.test./AAAA": true, "mail.skydns.test./TXT": true,
	"svc.skydns.test./A": true, "svc.skydns.test./AAAA": true, "svc.skydns.test./TXT": true,
	"skydns.test./TXT": true,
}

// cutRead are the questions whose read spans more than the 4096 records gatewaydns answers a
// question from, where the records after those would add to the stock answer: here another
// address. gatewaydns answers from the first 4096 (README, "Large reads").
var cutRead = map[string]bool{"dups.huge.test./A": true}

// checkCutRead fails t unless got is the stock answer want without some of its records.
func checkCutRead(t *testing.T, want, got *dns.Msg) {
	t.Helper()
	fail := func(why string) {
		t.Fatalf("%s\n--- stock etcd plugin\n%s--- gatewaydns\n%s", why, e2e.Render(want), e2e.Render(got))
	}
	if e2e.Render(got) == e2e.Render(want) {
		fail("the same as the stock answer: the read is no longer cut here, unpin the case")
	}
	if got.Rcode != want.Rcode || got.Truncated != want.Truncated || len(got.Answer) == 0 {
		fail("the rcode or TC differs, or the answer is empty")
	}
	stock := map[string]bool{}
	for _, rr := range want.Answer {
		stock[rr.String()] = true
	}
	for _, rr := range got.Answer {
		if !stock[rr.String()] {
			fail(rr.String() + " is not in the stock answer")
		}
	}
}

// checkCNAMERuled fails t unless got is what the CNAME rule leaves of the stock answer want
// when the other data is older: the same rcode, no CNAME for the name, a valid answer, and only
// records the stock answer has.
func checkCNAMERuled(t *testing.T, name string, want, got *dns.Msg) {
	t.Helper()
	fail := func(why string) {
		t.Fatalf("%s\n--- stock etcd plugin\n%s--- gatewaydns\n%s", why, e2e.Render(want), e2e.Render(got))
	}
	if e2e.Render(got) == e2e.Render(want) {
		fail("the same as the stock answer: the rule no longer departs from it here, unpin the case")
	}
	if got.Rcode != want.Rcode {
		fail("the rcode differs")
	}
	if dnscheck.CNAMEBesideOtherData(got.Answer) {
		fail("a CNAME beside other data")
	}
	stock := map[string]bool{}
	for _, rr := range want.Answer {
		stock[rr.String()] = true
	}
	for _, rr := range got.Answer {
		if rr.Header().Rrtype == dns.TypeCNAME && strings.EqualFold(rr.Header().Name, name) {
			fail("a CNAME for a name whose older records are other data")
		}
		if !stock[rr.String()] {
			fail(rr.String() + " is not in the stock answer")
		}
	}
}
