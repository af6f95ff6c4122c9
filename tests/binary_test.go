package tests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/tcpproxy"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// corednsBinary is the binary under test (testenv.CoreDNSBinary).
func corednsBinary(t *testing.T) string { return testenv.CoreDNSBinary(t) }

// coreDNSProcess is the binary running one Corefile of corefile.d on loopback ports.
type coreDNSProcess struct {
	DNS, Health, Ready, Metrics string // host:port
	conf                        string // the Corefile's path, for a test that reloads it
	cmd                         *exec.Cmd
	log                         *processLog
	done                        chan error
}

// processLog is a process's output, read by the test while the process writes it.
type processLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *processLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *processLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// runCorefile starts the binary with corefile.d/NAME, its DNS port and the health, ready and
// metrics listeners moved to free loopback ports, and env added to its environment.
func runCorefile(t *testing.T, name string, env ...string) *coreDNSProcess {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "corefile.d", name))
	if err != nil {
		t.Fatal(err)
	}
	return startCorefile(t, name, string(src), env...)
}

// startCorefile starts the binary with the Corefile src (written to a file called name), moved
// to free loopback ports as runCorefile does.
func startCorefile(t *testing.T, name, src string, env ...string) *coreDNSProcess {
	t.Helper()
	p := newCoreDNSProcess(t)
	startProcess(t, p, name, src, env...)
	return p
}

// startProcess starts p, made by newCoreDNSProcess, as startCorefile does.
func startProcess(t *testing.T, p *coreDNSProcess, name, src string, env ...string) {
	t.Helper()
	_, port, _ := strings.Cut(p.DNS, ":")
	p.start(t, name, p.localize(src), []string{"-dns.port", port}, env)
}

// localize moves the listeners of the health, ready and prometheus plugins in src to p's
// loopback ports.
func (p *coreDNSProcess) localize(src string) string {
	return corednsproc.Localize(src, p.Health, p.Ready, p.Metrics)
}

// newCoreDNSProcess picks the loopback ports for a coredns to start.
func newCoreDNSProcess(t *testing.T) *coreDNSProcess {
	ports := corednsproc.Ports(t, 4)
	return &coreDNSProcess{
		DNS:     fmt.Sprintf("127.0.0.1:%d", ports[0]),
		Health:  fmt.Sprintf("127.0.0.1:%d", ports[1]),
		Ready:   fmt.Sprintf("127.0.0.1:%d", ports[2]),
		Metrics: fmt.Sprintf("127.0.0.1:%d", ports[3]),
		log:     new(processLog),
		done:    make(chan error, 1),
	}
}

// start writes corefile to a file called name and runs the binary with it, args and env added
// to this environment. The process is stopped when the test ends; its log is shown when the
// test failed.
func (p *coreDNSProcess) start(t *testing.T, name, corefile string, args, env []string) {
	t.Helper()
	p.conf = filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p.conf, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(corednsBinary(t), append([]string{"-conf", p.conf}, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.stop(t)
		// GATEWAYDNS_E2E_LOGS=1 shows the log of a test that passed too.
		if t.Failed() || os.Getenv("GATEWAYDNS_E2E_LOGS") != "" {
			t.Logf("coredns %s, Corefile:\n%s\noutput:\n%s", name, corefile, p.log.String())
		}
	})
}

// waitReady polls the ready plugin until it says OK.
func (p *coreDNSProcess) waitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			t.Fatalf("coredns exited before it was ready: %v\n%s", err, p.log.String())
		default:
		}
		if body, code := httpGet("http://" + p.Ready + "/ready"); code == http.StatusOK {
			_ = body
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("coredns not ready within %s\n%s", timeout, p.log.String())
}

func (p *coreDNSProcess) stop(t *testing.T) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("coredns did not stop within 10s of SIGTERM")
	}
}

func httpGet(url string) (string, int) {
	resp, err := http.Get(url) // #nosec G107 -- loopback test URL
	if err != nil {
		return "", 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode
}

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

	p := runCorefile(t, "central.Corefile", "GATEWAYDNS_ETCD_ENDPOINTS="+etcd.ClientURL)
	p.waitReady(t, 30*time.Second)

	for _, netw := range []string{"udp", "tcp"} {
		r := ask(t, netw, p.DNS, "app.eu1.openmcp.cluster.", dns.TypeA)
		if got := addresses(r); !r.Authoritative || strings.Join(got, ",") != "203.0.113.10,203.0.113.11" {
			t.Errorf("%s: A app.eu1 = %v", netw, r)
		}
		r = ask(t, netw, p.DNS, "shop.us1.openmcp.cluster.", dns.TypeA)
		if len(r.Answer) != 3 || r.Answer[0].(*dns.CNAME).Target != "app.eu1.openmcp.cluster." {
			t.Errorf("%s: A shop.us1 should chase the CNAME in the zone: %v", netw, r)
		}
		r = ask(t, netw, p.DNS, "shop.us1.openmcp.cluster.", dns.TypeCNAME)
		if len(r.Answer) != 1 || r.Answer[0].(*dns.CNAME).Target != "app.eu1.openmcp.cluster." {
			t.Errorf("%s: CNAME shop.us1 should answer the CNAME one level down: %v", netw, r)
		}
		r = ask(t, netw, p.DNS, "nothere.openmcp.cluster.", dns.TypeA)
		if r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 {
			t.Errorf("%s: unknown name should be NXDOMAIN with SOA: %v", netw, r)
		}
		r = ask(t, netw, p.DNS, "bad.eu1.openmcp.cluster.", dns.TypeA)
		if r.Rcode != dns.RcodeNameError {
			t.Errorf("%s: a malformed value is skipped, not served nor SERVFAIL: %v", netw, r)
		}
	}
	// 80 addresses do not fit a plain UDP reply: UDP truncates, TCP carries them all.
	if r := ask(t, "udp", p.DNS, "many.eu1.openmcp.cluster.", dns.TypeA); !r.Truncated {
		t.Errorf("UDP reply of 80 A records should be truncated, got %d answers", len(r.Answer))
	}
	if r := ask(t, "tcp", p.DNS, "many.eu1.openmcp.cluster.", dns.TypeA); r.Truncated || len(r.Answer) != 80 {
		t.Errorf("TCP reply should hold all 80 A records, got %d (tc=%v)", len(r.Answer), r.Truncated)
	}

	metrics, _ := httpGet("http://" + p.Metrics + "/metrics")
	checkSeries(t, metrics, `coredns_gatewaydns_index_records{zones="openmcp.cluster."}`, 83)
	checkSeries(t, metrics, `coredns_gatewaydns_invalid_records_total{zones="openmcp.cluster."}`, 1)
	checkSeries(t, metrics, `coredns_gatewaydns_resyncs_total{reason="start",zones="openmcp.cluster."}`, 1)
	if !strings.Contains(p.log.String(), "/skydns/cluster/openmcp/eu1/bad/00000000") {
		t.Errorf("the skipped key is not logged:\n%s", p.log.String())
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
	stock := runCorefile(t, "stock-etcd.Corefile", env)
	ours := runCorefile(t, "central.Corefile", env)
	stock.waitReady(t, 30*time.Second)
	ours.waitReady(t, 30*time.Second)
	for _, q := range []struct {
		name  string
		qtype uint16
	}{{"app.eu1.openmcp.cluster.", dns.TypeA}, {"eu1.openmcp.cluster.", dns.TypeSRV}, {"x.openmcp.cluster.", dns.TypeA}, {"app.eu1.openmcp.cluster.", dns.TypeAAAA}} {
		for _, netw := range []string{"udp", "tcp"} {
			if w, g := render(ask(t, netw, stock.DNS, q.name, q.qtype)), render(ask(t, netw, ours.DNS, q.name, q.qtype)); w != g {
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
			cmd := exec.Command(corednsBinary(t), "-conf", conf, "-dns.port", fmt.Sprint(freePort(t)))
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
	out, err := exec.Command(corednsBinary(t), "-plugins").CombinedOutput()
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
	out, err = exec.Command(corednsBinary(t), "-version").CombinedOutput()
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

	p := runCorefile(t, "central.Corefile", "GATEWAYDNS_ETCD_ENDPOINTS=http://"+proxy.Addr)
	waitFor(t, 10*time.Second, p.DNS, "app.eu1.openmcp.cluster.", dns.TypeA, func(r *dns.Msg) bool { return r.Rcode == dns.RcodeServerFailure })
	if _, code := httpGet("http://" + p.Ready + "/ready"); code != http.StatusServiceUnavailable {
		t.Fatalf("/ready answered %d before the first load, want 503", code)
	}
	proxy.Restore()
	p.waitReady(t, 30*time.Second)
	if r := ask(t, "udp", p.DNS, "app.eu1.openmcp.cluster.", dns.TypeA); !answersWith("203.0.113.10")(r) {
		t.Fatalf("after load: %v", r)
	}
}
