package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// xfrCorpus writes n names in the writers' layout (a name key with record-id children) under
// openmcp.cluster: addresses, IPv6, in-zone CNAMEs, text beside addresses, mail, SRV. It
// returns the published names and the names of their record keys, and which are CNAMEs.
func xfrCorpus(t *testing.T, cli *clientv3.Client, n int) (names []string, cnames map[string]bool) {
	t.Helper()
	cnames = map[string]bool{}
	var ops []clientv3.Op
	put := func(name, id, value string) {
		labels := strings.Split(strings.TrimSuffix(name, ".openmcp.cluster."), ".")
		key := "/skydns/cluster/openmcp"
		for i := len(labels) - 1; i >= 0; i-- {
			key += "/" + labels[i]
		}
		ops = append(ops, clientv3.OpPut(key+"/"+id, value))
		names = append(names, id+"."+name)
	}
	for i := range n {
		name := fmt.Sprintf("app%d.c%d.openmcp.cluster.", i, i%7)
		names = append(names, name)
		ip := fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256)
		switch i % 10 {
		case 6:
			put(name, "9a0c11f0", fmt.Sprintf(`{"host":"2001:db8::%x","ttl":60,"targetstrip":1}`, i))
		case 7:
			put(name, "5d1c0e2a", fmt.Sprintf(`{"host":"app%d.c%d.openmcp.cluster","ttl":60,"targetstrip":1}`, i-7, (i-7)%7))
			cnames[name] = true
			cnames["5d1c0e2a."+name] = true
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
	ops = append(ops, clientv3.OpPut("/skydns/cluster/openmcp/dns/ns/ns1", `{"host":"10.9.0.53"}`))
	putInTxns(t, cli, ops)
	return names, cnames
}

// xfrQuestions are the types a secondary must answer as the primary does. For a CNAME, only
// A and CNAME: a zone's CNAME answers every type, the plugin some of them otherwise (README).
var xfrQuestions = []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeSRV, dns.TypeTXT, dns.TypeMX, dns.TypeNS}

// compareAnswers asks both servers every question about every name over netw, 8 at a time,
// and fails on the first few differences of rcode, answer, or (for a negative answer) authority.
func compareAnswers(t *testing.T, netw, primary, secondary string, names []string, cnames map[string]bool) {
	t.Helper()
	type question struct {
		name  string
		qtype uint16
	}
	work := make(chan question)
	var mu sync.Mutex
	var diffs []string
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for q := range work {
				p, s := ask(t, netw, primary, q.name, q.qtype), ask(t, netw, secondary, q.name, q.qtype)
				if got, want := comparable(s), comparable(p); got != want {
					mu.Lock()
					diffs = append(diffs, fmt.Sprintf("%s %s over %s:\nsecondary %s\nprimary   %s", q.name, dns.TypeToString[q.qtype], netw, got, want))
					mu.Unlock()
				}
			}
		})
	}
	for _, name := range names {
		for _, qtype := range xfrQuestions {
			if cnames[name] && qtype != dns.TypeA && qtype != dns.TypeCNAME {
				continue
			}
			work <- question{name, qtype}
		}
	}
	close(work)
	wg.Wait()
	for i, d := range diffs {
		if i == 10 {
			t.Errorf("... and %d more differences", len(diffs)-10)
			break
		}
		t.Error(d)
	}
}

// comparable is a reply's rcode and answer, and its authority when the answer is empty (the
// file plugin puts the zone's NS beside a positive answer, gatewaydns does not).
func comparable(r *dns.Msg) string {
	ns := []string{}
	if len(r.Answer) == 0 {
		ns = section(r.Ns)
	}
	return fmt.Sprintf("%s answer %v ns %v", dns.RcodeToString[r.Rcode], section(r.Answer), ns)
}

func serialOf(t *testing.T, addr string) uint32 {
	r, err := exchange("udp", addr, "openmcp.cluster.", dns.TypeSOA)
	if err != nil || len(r.Answer) == 0 {
		return 0
	}
	if soa, ok := r.Answer[0].(*dns.SOA); ok {
		return soa.Serial
	}
	return 0
}

// TestSecondaryHoldsTheZoneAndFollowsChangesByNotify runs corefile.d/primary.Corefile and
// corefile.d/secondary.Corefile as two processes of this binary against a real etcd holding
// 10k names: the secondary answers every published name, and every record key's name, as the
// primary does, and follows a new name and a delete through NOTIFY within a second.
func TestSecondaryHoldsTheZoneAndFollowsChangesByNotify(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	names, cnames := xfrCorpus(t, cli, 10000)

	secondary := newCoreDNSProcess(t)
	primary := runCorefile(t, "primary.Corefile", "GATEWAYDNS_ETCD_ENDPOINTS="+etcd.ClientURL, "GATEWAYDNS_SECONDARIES="+secondary.DNS)
	primary.waitReady(t, 30*time.Second)
	src, err := os.ReadFile(filepath.Join("..", "corefile.d", "secondary.Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	startProcess(t, secondary, "secondary.Corefile", string(src), "GATEWAYDNS_PRIMARY="+primary.DNS)
	want := serialOf(t, primary.DNS)
	waitFor(t, 30*time.Second, secondary.DNS, "openmcp.cluster.", dns.TypeSOA, func(r *dns.Msg) bool {
		return len(r.Answer) == 1 && r.Answer[0].(*dns.SOA).Serial == want
	})

	// Every published name over UDP; the names of record keys (the leaves), and TCP, sampled.
	start := time.Now()
	var published, sample []string
	for i, name := range names {
		if !strings.Contains(name, ".app") || strings.HasPrefix(name, "_") {
			published = append(published, name)
		}
		if i%20 == 0 {
			sample = append(sample, name)
		}
	}
	compareAnswers(t, "udp", primary.DNS, secondary.DNS, published, cnames)
	compareAnswers(t, "tcp", primary.DNS, secondary.DNS, sample, cnames)
	t.Logf("compared %d published names over UDP, %d names over TCP, in %s", len(published), len(sample), time.Since(start).Round(time.Millisecond))

	// A change reaches the secondary by NOTIFY: its refresh is 7200 s.
	ctx := context.Background()
	put, err := cli.Put(ctx, "/skydns/cluster/openmcp/c1/new/3e6bee2e", `{"host":"203.0.113.99","ttl":60}`)
	if err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	r := waitFor(t, 3*time.Second, secondary.DNS, "new.c1.openmcp.cluster.", dns.TypeA, hasAnswer)
	took := time.Since(changed)
	if took > time.Second {
		t.Errorf("the secondary answered a new name %s after the put, want within 1s", took)
	}
	if got := serialOf(t, secondary.DNS); int64(got) != put.Header.Revision {
		t.Errorf("secondary serial %d, want the put's revision %d", got, put.Header.Revision)
	}
	t.Logf("new name answered by the secondary %s after the put: %v", took.Round(time.Millisecond), r.Answer)

	if _, err := cli.Delete(ctx, "/skydns/cluster/openmcp/c1/new/3e6bee2e"); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	waitFor(t, 3*time.Second, secondary.DNS, "new.c1.openmcp.cluster.", dns.TypeA, func(r *dns.Msg) bool { return r.Rcode == dns.RcodeNameError })
	if took := time.Since(deleted); took > time.Second {
		t.Errorf("the secondary dropped a deleted name %s after the delete, want within 1s", took)
	}
	metrics, _ := httpGet("http://" + primary.Metrics + "/metrics")
	for _, want := range []string{`coredns_gatewaydns_transfers_total{kind="full",zones="openmcp.cluster."}`, `coredns_gatewaydns_notifies_total{result="ok",zones="openmcp.cluster."}`} {
		checkExported(t, metrics, want)
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
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startCoreDNS(t, fmt.Sprintf(`openmcp.cluster:%s {
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
	waitFor(t, 10*time.Second, addr, "app.eu1.openmcp.cluster.", dns.TypeA, hasAnswer)

	axfr := func(signed bool) ([]dns.RR, error) {
		m := new(dns.Msg)
		m.SetAxfr("openmcp.cluster.")
		tr := &dns.Transfer{}
		if signed {
			m.SetTsig(key, dns.HmacSHA256, 300, time.Now().Unix())
			tr.TsigSecret = map[string]string{key: secret}
		}
		c, err := dns.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		tr.Conn = c
		ch, err := tr.In(m, addr)
		if err != nil {
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
