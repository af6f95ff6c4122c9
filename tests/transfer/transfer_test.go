// Package transfer tests the zone's way out: AXFR, IXFR and NOTIFY to real secondaries (the
// secondary plugin, Knot and NSD: internal/e2e/secondaries.go), TSIG, replicas that serve one serial,
// restarts the secondaries follow by IXFR (restart_test.go), the catalog zone
// (catalog_test.go), and transfers whose secondary stopped reading (stall_test.go).
package transfer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// xfrCorpus writes n names in the writers' layout (a name key with record-id children) under
// openmcp.cluster: addresses, IPv6, in-zone CNAMEs (to names with addresses, with IPv6, with
// addresses and text), text beside addresses, mail, SRV, and the zone's name server. The
// corpus's names are every published name and every record key's name (the leaves), and the
// name server's names.
func xfrCorpus(t *testing.T, cli *clientv3.Client, n int) corpus {
	t.Helper()
	c := corpus{cnames: map[string]string{}, holds: map[string][]uint16{}}
	var ops []clientv3.Op
	put := func(name, id, value string) {
		labels := strings.Split(strings.TrimSuffix(name, ".openmcp.cluster."), ".")
		key := "/skydns/cluster/openmcp"
		for i := len(labels) - 1; i >= 0; i-- {
			key += "/" + labels[i]
		}
		ops = append(ops, clientv3.OpPut(key+"/"+id, value))
		c.names = append(c.names, id+"."+name)
	}
	appName := func(i int) string { return fmt.Sprintf("app%d.c%d.openmcp.cluster.", i, i%7) }
	for i := range n {
		name := appName(i)
		c.names = append(c.names, name)
		ip := fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256)
		switch i % 10 {
		case 6:
			put(name, "9a0c11f0", fmt.Sprintf(`{"host":"2001:db8::%x","ttl":60,"targetstrip":1}`, i))
		case 7:
			// To a name with addresses (i-7), IPv6 (i-11) or addresses and text (i-19).
			back := map[int]int{7: 7, 17: 11, 27: 19}[i%30]
			target := appName(i - back)
			put(name, "5d1c0e2a", fmt.Sprintf(`{"host":%q,"ttl":60,"targetstrip":1}`, strings.TrimSuffix(target, ".")))
			c.cnames[name], c.cnames["5d1c0e2a."+name] = target, target
			c.holds[target] = map[int][]uint16{7: {dns.TypeA}, 11: {dns.TypeAAAA}, 19: {dns.TypeA, dns.TypeTXT}}[back]
		case 8:
			put(name, "3e6bee2e", fmt.Sprintf(`{"host":"%s","ttl":60,"targetstrip":1}`, ip))
			put(name, "7f00aa01", `{"text":"heritage=external-dns,external-dns/owner=eu1","ttl":60}`)
		case 9:
			put(name, "3e6bee2e", fmt.Sprintf(`{"host":"%s","mail":true,"priority":20}`, ip))
		default:
			put(name, "3e6bee2e", fmt.Sprintf(`{"host":"%s","ttl":60,"targetstrip":1}`, ip))
			if i%3 == 0 {
				put(name, "9a0c11f0", fmt.Sprintf(`{"host":"10.200.%d.%d","ttl":60,"targetstrip":1}`, i/256%256, i%256))
			}
		}
	}
	put("_https._tcp.api.c0.openmcp.cluster.", "1", `{"host":"10.9.0.1","port":443}`)
	put("ns.dns.openmcp.cluster.", "ns1", `{"host":"10.9.0.53"}`)
	c.names = append(c.names, "ns.dns.openmcp.cluster.")
	e2e.PutInTxns(t, cli, ops)
	return c
}

// withTransferSynthetic adds transfer-synthetic to primary.Corefile's gatewaydns stanza.
func withTransferSynthetic(t *testing.T) func(string) string {
	return func(s string) string {
		const endpoint = "endpoint {$GATEWAYDNS_ETCD_ENDPOINTS}"
		if !strings.Contains(s, endpoint) {
			t.Fatalf("primary.Corefile has no %q line to add transfer-synthetic after", endpoint)
		}
		return strings.Replace(s, endpoint, endpoint+"\n        transfer-synthetic", 1)
	}
}

func serialOf(t *testing.T, addr string) uint32 {
	r, err := e2e.Exchange("udp", addr, "openmcp.cluster.", dns.TypeSOA)
	if err != nil || len(r.Answer) == 0 {
		return 0
	}
	if soa, ok := r.Answer[0].(*dns.SOA); ok {
		return soa.Serial
	}
	return 0
}

// primaryWithSecondary runs corefile.d/primary.Corefile (edited by edit) and
// corefile.d/secondary.Corefile as two processes of this binary against etcd, and waits until
// the secondary holds the primary's serial.
func primaryWithSecondary(t *testing.T, etcdURL string, edit func(string) string) (primary, secondary *corednsproc.Process) {
	t.Helper()
	secondary = corednsproc.Prepare(t, "secondary.Corefile")
	primary = corednsproc.Start(t, "primary.Corefile", edit(e2e.ReadCorefile(t, "primary.Corefile")), "GATEWAYDNS_ETCD_ENDPOINTS="+etcdURL, "GATEWAYDNS_SECONDARIES="+secondary.DNS)
	primary.WaitReady(t, 30*time.Second)
	secondary.Start(t, e2e.ReadCorefile(t, "secondary.Corefile"), "GATEWAYDNS_PRIMARY="+primary.DNS)
	want := serialOf(t, primary.DNS)
	e2e.WaitFor(t, 30*time.Second, secondary.DNS, "openmcp.cluster.", dns.TypeSOA, func(r *dns.Msg) bool {
		return len(r.Answer) == 1 && r.Answer[0].(*dns.SOA).Serial == want
	})
	return primary, secondary
}

// TestSecondaryHoldsTheZoneAndFollowsChangesByNotify runs corefile.d/primary.Corefile and
// corefile.d/secondary.Corefile as two processes of this binary against a real etcd holding
// 10k names: the secondary answers every published name, every record key's name and the name
// server's names as the primary does (a CNAME's other questions as the README says), and the
// apex's NS and SOA, and follows a new name and a delete through NOTIFY within a second.
func TestSecondaryHoldsTheZoneAndFollowsChangesByNotify(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	c := xfrCorpus(t, cli, 10000)
	// transfer-synthetic: the secondary holds what the primary answers for every name, record-id
	// names and SRV records of addresses too, so that every question compares
	// (enterprise_test.go pins the default transfer against Knot and NSD).
	primary, secondary := primaryWithSecondary(t, etcd.ClientURL, withTransferSynthetic(t))

	start := time.Now()
	qs := append(c.alikeQuestions(), question{"openmcp.cluster.", dns.TypeNS}, question{"openmcp.cluster.", dns.TypeSOA})
	compareAnswers(t, "udp", primary.DNS, secondary.DNS, qs)
	var sample []question
	for i := 0; i < len(qs); i += 50 {
		sample = append(sample, qs[i])
	}
	compareAnswers(t, "tcp", primary.DNS, secondary.DNS, sample)
	differ := checkCNAMEDifferences(t, primary.DNS, secondary.DNS, c)
	t.Logf("compared %d questions about %d names over UDP (%d over TCP), and %d questions answered otherwise about CNAMEs, in %s", len(qs), len(c.names), len(sample), differ, time.Since(start).Round(time.Millisecond))

	// A change reaches the secondary by NOTIFY: its refresh is 7200 s.
	ctx := context.Background()
	put, err := cli.Put(ctx, "/skydns/cluster/openmcp/c1/new/3e6bee2e", `{"host":"203.0.113.99","ttl":60}`)
	if err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	r := e2e.WaitFor(t, 3*time.Second, secondary.DNS, "new.c1.openmcp.cluster.", dns.TypeA, e2e.HasAnswer)
	took := time.Since(changed)
	if took > time.Second {
		t.Errorf("the secondary answered a new name %s after the put, want within 1s", took)
	}
	if got := serialOf(t, secondary.DNS); int64(got) != put.Header.Revision {
		t.Errorf("secondary serial %d, want the put's revision %d", got, put.Header.Revision)
	}
	t.Logf("new name answered by the secondary %s after the put: %v", took.Round(time.Millisecond), r.Answer)

	del, err := cli.Delete(ctx, "/skydns/cluster/openmcp/c1/new/3e6bee2e")
	if err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	e2e.WaitFor(t, 3*time.Second, secondary.DNS, "new.c1.openmcp.cluster.", dns.TypeA, func(r *dns.Msg) bool { return r.Rcode == dns.RcodeNameError })
	if took := time.Since(deleted); took > time.Second {
		t.Errorf("the secondary dropped a deleted name %s after the delete, want within 1s", took)
	}
	for _, addr := range []string{primary.DNS, secondary.DNS} {
		if got := serialOf(t, addr); int64(got) != del.Header.Revision {
			t.Errorf("%s: serial %d after the delete, want its revision %d", addr, got, del.Header.Revision)
		}
	}
	metrics, _ := e2e.HTTPGet("http://" + primary.Metrics + "/metrics")
	for _, want := range []string{`coredns_gatewaydns_transfers_total{kind="full",zones="openmcp.cluster."}`, `coredns_gatewaydns_notifies_total{result="ok",zones="openmcp.cluster."}`} {
		e2e.CheckExported(t, metrics, want)
	}
}

// TestAXFRRequiresTSIGWithTheStockTSIGPlugin: with tsig requiring it, an unsigned AXFR is
// refused and a signed one transfers the zone, signed.
func TestAXFRRequiresTSIGWithTheStockTSIGPlugin(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	if _, err := etcd.Client(t).Put(context.Background(), "/skydns/cluster/openmcp/eu1/app/3e6bee2e", `{"host":"203.0.113.10"}`); err != nil {
		t.Fatal(err)
	}
	const key, secret = "xfr.openmcp.cluster.", "c2VjcmV0LWZvci10aGUtdGVzdA=="
	addr := fmt.Sprintf("127.0.0.1:%d", corednsproc.FreePort(t))
	e2e.StartCoreDNS(t, fmt.Sprintf(`openmcp.cluster:%s {
    tsig {
        secret %s %s
        require AXFR IXFR
    }
    transfer {
        to *
    }
    gatewaydns {
        endpoint %s
    }
}`, strings.TrimPrefix(addr, "127.0.0.1:"), key, secret, etcd.ClientURL))
	e2e.WaitFor(t, 10*time.Second, addr, "app.eu1.openmcp.cluster.", dns.TypeA, e2e.HasAnswer)

	axfr := func(signed bool) ([]dns.RR, error) {
		m := new(dns.Msg)
		m.SetAxfr("openmcp.cluster.")
		if !signed {
			return xfrFrom("127.0.0.1", addr, m, nil)
		}
		m.SetTsig(key, dns.HmacSHA256, 300, time.Now().Unix())
		return xfrFrom("127.0.0.1", addr, m, map[string]string{key: secret})
	}
	if rrs, err := axfr(false); err == nil {
		t.Errorf("an unsigned AXFR transferred %d records, want it refused", len(rrs))
	}
	rrs, err := axfr(true)
	if err != nil {
		t.Fatalf("signed AXFR: %v", err)
	}
	if len(rrs) < 3 || rrs[0].Header().Rrtype != dns.TypeSOA || rrs[len(rrs)-1].Header().Rrtype != dns.TypeSOA {
		t.Fatalf("signed AXFR: %v", rrs)
	}
	found := false
	for _, rr := range rrs {
		if a, ok := rr.(*dns.A); ok && a.Hdr.Name == "app.eu1.openmcp.cluster." && a.A.String() == "203.0.113.10" {
			found = true
		}
	}
	if !found {
		t.Errorf("signed AXFR lacks app.eu1.openmcp.cluster. A 203.0.113.10: %v", rrs)
	}
}
