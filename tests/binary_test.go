// Package tests holds the end-to-end tests of the binary and its serve path, against real
// components: etcd, kube-apiserver, CoreDNS processes answering real DNS over UDP and TCP (the
// binary, serve, bad input, the batched UDP path, the shipped Corefiles, the stock etcd plugin
// side by side, the documents' commands, monitoring). The other themes are packages of their
// own, which go test runs side by side: deploy, migration, transfer, publish, faults,
// lifecycle and alerting. What they share is in internal/e2e (questions, pollers, the roles'
// Corefiles, metrics checks) and internal/corednsproc (the CoreDNS process).
package tests

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/tcpproxy"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// TestBinaryServesZoneFromCorefile builds ./coredns, runs corefile.d/central.Corefile against a
// real etcd, and asks it over UDP and TCP, as dig would.
func TestBinaryServesZoneFromCorefile(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	ctx := context.Background()
	records := map[string]string{
		"/skydns/cluster/openmcp/eu1/app/3e6bee2e":  `{"host":"203.0.113.10","ttl":60,"targetstrip":1,"owner":"eu1"}`,
		"/skydns/cluster/openmcp/eu1/app/9a0c11f0":  `{"host":"203.0.113.11","ttl":60,"targetstrip":1,"owner":"eu1"}`,
		"/skydns/cluster/openmcp/us1/shop/5d1c0e2a": `{"host":"app.eu1.openmcp.cluster","ttl":60,"targetstrip":1,"owner":"us1"}`,
		"/skydns/cluster/openmcp/eu1/bad/00000000":  `{"host":`,
	}
	for i := range 80 {
		records[fmt.Sprintf("/skydns/cluster/openmcp/eu1/many/%08x", i)] = fmt.Sprintf(`{"host":"198.51.100.%d"}`, i+1)
	}
	for k, v := range records {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}

	p := e2e.RunCorefile(t, "central.Corefile", "GATEWAYDNS_ETCD_ENDPOINTS="+etcd.ClientURL)
	p.WaitReady(t, 30*time.Second)

	for _, netw := range []string{"udp", "tcp"} {
		r := e2e.Ask(t, netw, p.DNS, "app.eu1.openmcp.cluster.", dns.TypeA)
		if got := e2e.Addresses(r); !r.Authoritative || strings.Join(got, ",") != "203.0.113.10,203.0.113.11" {
			t.Errorf("%s: A app.eu1 = %v", netw, r)
		}
		r = e2e.Ask(t, netw, p.DNS, "shop.us1.openmcp.cluster.", dns.TypeA)
		if len(r.Answer) != 3 || r.Answer[0].(*dns.CNAME).Target != "app.eu1.openmcp.cluster." {
			t.Errorf("%s: A shop.us1 should chase the CNAME in the zone: %v", netw, r)
		}
		r = e2e.Ask(t, netw, p.DNS, "shop.us1.openmcp.cluster.", dns.TypeCNAME)
		if len(r.Answer) != 1 || r.Answer[0].(*dns.CNAME).Target != "app.eu1.openmcp.cluster." {
			t.Errorf("%s: CNAME shop.us1 should answer the CNAME one level down: %v", netw, r)
		}
		r = e2e.Ask(t, netw, p.DNS, "nothere.openmcp.cluster.", dns.TypeA)
		if r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 {
			t.Errorf("%s: unknown name should be NXDOMAIN with SOA: %v", netw, r)
		}
		r = e2e.Ask(t, netw, p.DNS, "bad.eu1.openmcp.cluster.", dns.TypeA)
		if r.Rcode != dns.RcodeNameError {
			t.Errorf("%s: a malformed value is skipped, not served nor SERVFAIL: %v", netw, r)
		}
	}
	// 80 addresses do not fit a plain UDP reply: UDP truncates, TCP carries them all.
	if r := e2e.Ask(t, "udp", p.DNS, "many.eu1.openmcp.cluster.", dns.TypeA); !r.Truncated {
		t.Errorf("UDP reply of 80 A records should be truncated, got %d answers", len(r.Answer))
	}
	if r := e2e.Ask(t, "tcp", p.DNS, "many.eu1.openmcp.cluster.", dns.TypeA); r.Truncated || len(r.Answer) != 80 {
		t.Errorf("TCP reply should hold all 80 A records, got %d (tc=%v)", len(r.Answer), r.Truncated)
	}

	metrics, _ := e2e.HTTPGet("http://" + p.Metrics + "/metrics")
	e2e.CheckSeries(t, metrics, `coredns_gatewaydns_index_records{zones="openmcp.cluster."}`, 83)
	e2e.CheckSeries(t, metrics, `coredns_gatewaydns_invalid_records_total{zones="openmcp.cluster."}`, 1)
	e2e.CheckSeries(t, metrics, `coredns_gatewaydns_resyncs_total{reason="start",zones="openmcp.cluster."}`, 1)
	if !strings.Contains(p.Output(), "/skydns/cluster/openmcp/eu1/bad/00000000") {
		t.Errorf("the skipped key is not logged:\n%s", p.Output())
	}
}

// TestBinaryRunsStockEtcdCorefileUnchanged: the drop-in promise. The stock etcd plugin's
// Corefile runs on this binary and answers as gatewaydns does from the same store.
func TestBinaryRunsStockEtcdCorefileUnchanged(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	if _, err := etcd.Client(t).Put(context.Background(), "/skydns/cluster/openmcp/eu1/app/3e6bee2e", `{"host":"203.0.113.10"}`); err != nil {
		t.Fatal(err)
	}
	env := "GATEWAYDNS_ETCD_ENDPOINTS=" + etcd.ClientURL
	stock := e2e.RunCorefile(t, "stock-etcd.Corefile", env)
	ours := e2e.RunCorefile(t, "central.Corefile", env)
	stock.WaitReady(t, 30*time.Second)
	ours.WaitReady(t, 30*time.Second)
	for _, q := range []struct {
		name  string
		qtype uint16
	}{{"app.eu1.openmcp.cluster.", dns.TypeA}, {"eu1.openmcp.cluster.", dns.TypeSRV}, {"x.openmcp.cluster.", dns.TypeA}, {"app.eu1.openmcp.cluster.", dns.TypeAAAA}} {
		for _, netw := range []string{"udp", "tcp"} {
			if w, g := e2e.Render(e2e.Ask(t, netw, stock.DNS, q.name, q.qtype)), e2e.Render(e2e.Ask(t, netw, ours.DNS, q.name, q.qtype)); w != g {
				t.Errorf("%s %s over %s differs\n--- stock\n%s--- gatewaydns\n%s", q.name, dns.TypeToString[q.qtype], netw, w, g)
			}
		}
	}
}

// TestBinaryRefusesBadCorefile: a Corefile that cannot work stops startup with a message
// that names the file, the line and what is wrong.
func TestBinaryRefusesBadCorefile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		corefile string
		want     string // after "<file>:"; {conf} stands for the file
	}{
		{
			name:     "a misspelt option",
			corefile: "openmcp.cluster {\n    gatewaydns {\n        endpoint http://127.0.0.1:1\n        endpiont http://127.0.0.1:2\n    }\n}\n",
			want:     "4 - Error during parsing: unknown property 'endpiont'",
		},
		{
			// Both would campaign in one election: one stanza's names would never be published.
			name: "two stanzas of one owner",
			corefile: "eu1.openmcp.cluster {\n    gatewaydns {\n        endpoint http://127.0.0.1:1\n        owner eu1\n        publish-only\n    }\n}\n" +
				"eu1.example.org {\n    gatewaydns {\n        endpoint http://127.0.0.1:1\n        owner eu1\n        publish-only\n    }\n}\n",
			want: `11 - Error during parsing: owner "eu1" is already published by the stanza at {conf}:4`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), "Corefile")
			if err := os.WriteFile(conf, []byte(tc.corefile), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(testenv.CoreDNSBinary(t), "-conf", conf, "-dns.port", fmt.Sprint(corednsproc.FreePort(t)))
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("coredns started with a bad Corefile:\n%s", out)
			}
			if want := conf + ":" + strings.ReplaceAll(tc.want, "{conf}", conf); !strings.Contains(string(out), want) {
				t.Fatalf("output does not name the line and the fault (%q):\n%s", want, out)
			}
		})
	}
}

// TestBinaryListsEveryPlugin: -plugins names gatewaydns and every stock plugin, -version works.
func TestBinaryListsEveryPlugin(t *testing.T) {
	out, err := exec.Command(testenv.CoreDNSBinary(t), "-plugins").CombinedOutput()
	if err != nil {
		t.Fatalf("-plugins: %v\n%s", err, out)
	}
	listed := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		listed[strings.TrimPrefix(l, "dns.")] = true
	}
	stock, err := os.ReadFile("../plugin.cfg")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(stock), "\n") {
		name, _, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(name, "#") || name == "on" { // "on" is a caddy event hook, not a DNS plugin
			continue
		}
		if !listed[name] {
			t.Errorf("-plugins does not list %q", name)
		}
	}
	out, err = exec.Command(testenv.CoreDNSBinary(t), "-version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "CoreDNS-1.15.0") {
		t.Fatalf("-version: %v\n%s", err, out)
	}
}

// TestBinaryNotReadyUntilLoaded: with etcd out of reach at start, the server is not ready and
// answers SERVFAIL (never a cacheable NXDOMAIN); once etcd is reachable it loads and answers.
func TestBinaryNotReadyUntilLoaded(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	if _, err := etcd.Client(t).Put(context.Background(), "/skydns/cluster/openmcp/eu1/app/1", `{"host":"203.0.113.10"}`); err != nil {
		t.Fatal(err)
	}
	proxy, err := tcpproxy.Start(strings.TrimPrefix(etcd.ClientURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	proxy.Cut()

	p := e2e.RunCorefile(t, "central.Corefile", "GATEWAYDNS_ETCD_ENDPOINTS=http://"+proxy.Addr)
	e2e.WaitFor(t, 10*time.Second, p.DNS, "app.eu1.openmcp.cluster.", dns.TypeA, func(r *dns.Msg) bool { return r.Rcode == dns.RcodeServerFailure })
	if _, code := e2e.HTTPGet("http://" + p.Ready + "/ready"); code != http.StatusServiceUnavailable {
		t.Fatalf("/ready answered %d before the first load, want 503", code)
	}
	proxy.Restore()
	p.WaitReady(t, 30*time.Second)
	if r := e2e.Ask(t, "udp", p.DNS, "app.eu1.openmcp.cluster.", dns.TypeA); !e2e.AnswersWith("203.0.113.10")(r) {
		t.Fatalf("after load: %v", r)
	}
}
