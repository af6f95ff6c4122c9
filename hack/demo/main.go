// Command demo runs a gatewaydns landscape on loopback (`make demo`, `make demo-down`):
//
//	go run ./hack/demo up     start it in the background, print dig answers, return
//	go run ./hack/demo down   stop everything it started, by PID
//
// The landscape: a central etcd over TLS with client certificates; two workload "clusters",
// eu1 and us1, each a real kube-apiserver (controller-runtime's envtest) with the Gateway API
// CRDs; a central CoreDNS running gatewaydns as the server of openmcp.cluster
// (corefile.d/central-tls.Corefile); and per cluster a CoreDNS running gatewaydns as writer
// (owner = cluster name, domain filter <cluster>.openmcp.cluster) that forwards the zone to the
// central server (corefile.d/workload-tls.Corefile). Sample Gateways, routes, Ingresses and a
// LoadBalancer Service are applied with their status set as their controllers would, and a
// DNSEndpoint.
//
// `up` starts a background process (`serve`, a copy of this program in .cache/demo) that owns
// the landscape: it starts every component, reports progress in .cache/demo/progress.log, and
// on SIGTERM stops them all. Every PID is in .cache/demo/pids, every log in .cache/demo/*.log.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/gatewaydns/gatewaydns/internal/child"
	"github.com/gatewaydns/gatewaydns/internal/pki"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

const (
	zone        = "openmcp.cluster"
	etcdPort    = 12379 // the central etcd's client port (TLS)
	centralPort = 1053  // DNS ports on 127.0.0.1
	startupWait = 5 * time.Minute
	driverName  = "gatewaydns-demo"
	controller  = "example.com/demo-gateway-controller"
)

// clusters are the workload clusters, each with its CoreDNS's DNS port.
var clusters = []struct {
	Name string
	Port int
}{{"eu1", 1054}, {"us1", 1055}}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: go run ./hack/demo up|down|set-address CLUSTER IP")
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		fatalf("%v (run it from the repository)", err)
	}
	d := &demo{root: root, dir: filepath.Join(root, ".cache", "demo")}
	switch os.Args[1] {
	case "up":
		os.Exit(d.up())
	case "down":
		if !d.down(true) {
			os.Exit(1)
		}
	case "serve":
		os.Exit(d.serve())
	case "set-address":
		if len(os.Args) != 4 {
			usage()
		}
		if err := d.setAddress(os.Args[2], os.Args[3]); err != nil {
			fatalf("%v", err)
		}
	default:
		usage()
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "demo: "+format+"\n", args...)
	os.Exit(1)
}

type demo struct {
	root, dir string
}

func (d *demo) path(elem ...string) string { return filepath.Join(append([]string{d.dir}, elem...)...) }

// rel shortens a path below the repository for printing.
func (d *demo) rel(p string) string {
	if r, err := filepath.Rel(d.root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

// ---------------------------------------------------------------------------------------------
// up

func (d *demo) up() int {
	if d.running() {
		fmt.Println("A demo is already running: stopping it first (make demo-down).")
		if !d.down(true) {
			return 1
		}
	}
	for _, b := range []string{filepath.Join(d.root, "coredns"), filepath.Join(d.root, "bin", "etcd"), filepath.Join(d.root, "bin", "kube-apiserver")} {
		if fi, err := os.Stat(b); err != nil || fi.Mode()&0o111 == 0 {
			fmt.Fprintf(os.Stderr, "demo: %s is missing: run `make demo`, which builds it (make build test-binaries)\n", d.rel(b))
			return 1
		}
	}
	if err := checkPorts(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	if err := os.RemoveAll(d.dir); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}

	// The background process is a copy of this program, so that it outlives `go run`'s
	// temporary build and shows up under a clear name in ps.
	self, err := os.Executable()
	if err == nil {
		err = copyFile(self, d.path(driverName), 0o755)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: copying the driver: %v\n", err)
		return 1
	}
	logf, err := os.Create(d.path("demo.log"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	cmd := exec.Command(d.path(driverName), "serve")
	cmd.Dir = d.root
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not in the terminal's process group
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: starting the background process: %v\n", err)
		return 1
	}
	logf.Close()
	if err := appendPID(d.path("pids"), cmd.Process.Pid, "demo", d.path("demo.log")); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)

	fmt.Printf("Starting a gatewaydns landscape on loopback (zone %s). Logs: %s/*.log\n", zone, d.rel(d.dir))
	status, ok := d.follow(exited, interrupted)
	if !ok {
		fmt.Fprintln(os.Stderr)
		if status != "" {
			fmt.Fprintln(os.Stderr, status)
		}
		fmt.Fprintln(os.Stderr, "Stopping what was started ...")
		d.down(false)
		return 1
	}
	var info landscapeInfo
	if data, err := os.ReadFile(d.path("landscape.json")); err != nil || json.Unmarshal(data, &info) != nil {
		fmt.Fprintf(os.Stderr, "demo: cannot read %s: %v\n", d.path("landscape.json"), err)
		return 1
	}
	d.printAnswers(&info)
	return 0
}

// follow prints the progress lines of the background process until it is ready (ok) or failed.
func (d *demo) follow(exited <-chan struct{}, interrupted <-chan os.Signal) (status string, ok bool) {
	var offset int64
	deadline := time.Now().Add(startupWait)
	for {
		lines, n := readNewLines(d.path("progress.log"), offset)
		offset = n
		for _, l := range lines {
			switch {
			case l == "READY":
				return "", true
			case strings.HasPrefix(l, "FAILED"):
				rest, _ := readNewLines(d.path("progress.log"), offset)
				return strings.Join(append([]string{strings.TrimPrefix(l, "FAILED ")}, rest...), "\n"), false
			default:
				fmt.Println(l)
			}
		}
		select {
		case <-exited:
			if lines, _ := readNewLines(d.path("progress.log"), offset); len(lines) > 0 {
				continue
			}
			return fmt.Sprintf("The background process exited unexpectedly; its log: %s\n%s", d.rel(d.path("demo.log")), testenv.LogTail(d.path("demo.log"), 20)), false
		case <-interrupted:
			return "Interrupted.", false
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("Not ready after %s; logs in %s", startupWait, d.rel(d.dir)), false
		}
	}
}

func readNewLines(path string, offset int64) ([]string, int64) {
	f, err := os.Open(path)
	if err != nil {
		return nil, offset
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset
	}
	data, _ := io.ReadAll(f)
	end := strings.LastIndexByte(string(data), '\n')
	if end < 0 {
		return nil, offset
	}
	return strings.Split(string(data[:end]), "\n"), offset + int64(end) + 1
}

func (d *demo) printAnswers(info *landscapeInfo) {
	_, digErr := exec.LookPath("dig")
	fmt.Println()
	fmt.Println("Every cluster's names, answered through each cluster's CoreDNS (forwarded to the central server):")
	for _, c := range info.Clusters {
		fmt.Printf("\n# through %s's CoreDNS, 127.0.0.1:%d\n", c.Name, c.Port)
		for _, n := range info.Names {
			d.dig(c.Port, n.Name, digErr == nil)
		}
	}
	for _, r := range info.Refused {
		fmt.Printf("\n# %s\n", r.Why)
		d.dig(r.Port, r.Name, digErr == nil)
	}
	fmt.Printf("\n# the whole zone, by zone transfer from the central server (what a secondary loads)\n")
	d.axfr(info.CentralPort, digErr == nil)
	if digErr != nil {
		fmt.Println("\n(dig is not installed, so these answers came from a Go DNS client; to get dig:")
		fmt.Println(" apt-get install bind9-dnsutils, dnf install bind-utils or brew install bind)")
	}
	ca, cert, key := d.rel(d.path("pki", "ca.crt")), d.rel(d.path("pki", "admin.crt")), d.rel(d.path("pki", "admin.key"))
	eu1, us1 := info.Clusters[0], info.Clusters[1]
	fmt.Printf(`
The landscape keeps running. Query it yourself:
  dig @127.0.0.1 -p %d web.eu1.%s         # the central server
  dig @127.0.0.1 -p %d api.us1.%s         # eu1's CoreDNS, forwarding to it
  dig @127.0.0.1 -p %d db.eu1.%s          # us1's CoreDNS
  bin/etcdctl --endpoints %s --cacert %s --cert %s --key %s \
      get --prefix /skydns/cluster/openmcp                     # the records, with their owners
  kubectl --kubeconfig %s get gateways,httproutes,tlsroutes,ingresses,services,dnsendpoints -A
Change a Gateway's address as its controller would, and ask again (answered within milliseconds):
  go run ./hack/demo set-address eu1 203.0.113.99 && dig @127.0.0.1 -p %d web.eu1.%s +short
Metrics: %s
Logs: %s/*.log
Stop it all: make demo-down
`, info.CentralPort, zone, eu1.Port, zone, us1.Port, zone,
		info.EtcdURL, ca, cert, key, d.rel(eu1.Kubeconfig), us1.Port, zone,
		strings.Join(info.Metrics, ", "), d.rel(d.dir))
}

// axfr prints a dig AXFR of the zone and the records it transferred.
func (d *demo) axfr(port int, haveDig bool) {
	fmt.Printf("$ dig @127.0.0.1 -p %d %s AXFR +nocmd +nostats\n", port, zone)
	if haveDig {
		out, err := exec.Command("dig", "@127.0.0.1", "-p", strconv.Itoa(port), zone, "AXFR", "+nocmd", "+nostats").CombinedOutput()
		fmt.Print(string(out))
		if err != nil {
			fmt.Printf(";; error: %v\n", err)
		}
		return
	}
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(zone))
	ch, err := (&dns.Transfer{}).In(m, fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		fmt.Printf(";; error: %v\n", err)
		return
	}
	for env := range ch {
		if env.Error != nil {
			fmt.Printf(";; error: %v\n", env.Error)
			return
		}
		for _, rr := range env.RR {
			fmt.Println(rr.String())
		}
	}
}

// dig prints a dig command and its answer section (or, for a name without one, its status).
func (d *demo) dig(port int, name string, haveDig bool) {
	if haveDig {
		out, err := exec.Command("dig", "@127.0.0.1", "-p", strconv.Itoa(port), name, "+noall", "+answer", "+comments").CombinedOutput()
		var answer []string
		status := ""
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "status:") {
				if i := strings.Index(l, "status: "); i >= 0 {
					status = strings.TrimSuffix(strings.Fields(l[i+len("status: "):])[0], ",")
				}
			}
			if l != "" && !strings.HasPrefix(l, ";") {
				answer = append(answer, l)
			}
		}
		if len(answer) > 0 {
			fmt.Printf("$ dig @127.0.0.1 -p %d %s +noall +answer\n%s\n", port, name, strings.Join(answer, "\n"))
		} else {
			if err != nil {
				status += " (" + err.Error() + ")"
			}
			fmt.Printf("$ dig @127.0.0.1 -p %d %s | grep status\n;; status: %s\n", port, name, status)
		}
		return
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 3 * time.Second}).Exchange(m, fmt.Sprintf("127.0.0.1:%d", port))
	fmt.Printf("$ dig @127.0.0.1 -p %d %s +noall +answer\n", port, name)
	switch {
	case err != nil:
		fmt.Printf(";; error: %v\n", err)
	case len(r.Answer) == 0:
		fmt.Printf(";; status: %s\n", dns.RcodeToString[r.Rcode])
	default:
		for _, rr := range r.Answer {
			fmt.Println(rr.String())
		}
	}
}

// checkPorts fails when a fixed port of the demo is taken.
func checkPorts() error {
	check := func(port int, what string, udp bool) error {
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		l, err := net.Listen("tcp", addr)
		if err == nil {
			l.Close()
			if udp {
				var u net.PacketConn
				if u, err = net.ListenPacket("udp", addr); err == nil {
					u.Close()
				}
			}
		}
		if err != nil {
			return fmt.Errorf("%s needs %s, which is in use (%v). Is another demo or `make run` running? "+
				"`make demo-down` stops a demo; `ss -lntup | grep :%d` shows who holds it", what, addr, err, port)
		}
		return nil
	}
	if err := check(etcdPort, "the central etcd", false); err != nil {
		return err
	}
	if err := check(centralPort, "the central CoreDNS", true); err != nil {
		return err
	}
	for _, c := range clusters {
		if err := check(c.Port, "the CoreDNS of cluster "+c.Name, true); err != nil {
			return err
		}
	}
	return nil
}

// ---------------------------------------------------------------------------------------------
// down

// pidEntry is a line of the pids file: a process the demo started.
type pidEntry struct {
	PID   int
	Start string // the process's start time (field 22 of /proc/PID/stat): guards against PID reuse
	Name  string
	Log   string
}

func appendPID(file string, pid int, name, logFile string) error {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "%d %s %s %s\n", pid, procStart(pid), name, logFile)
	return err
}

func readPIDs(file string) []pidEntry {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []pidEntry
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		e := pidEntry{PID: pid, Start: f[1], Name: f[2]}
		if len(f) > 3 {
			e.Log = f[3]
		}
		out = append(out, e)
	}
	return out
}

// procStart is the start time of a process in clock ticks since boot, "" when it does not run.
func procStart(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" { // a zombie has exited
		return ""
	}
	return f[19]
}

// alive reports whether the process of e still runs (the same process, not a reused PID).
func (e pidEntry) alive() bool { s := procStart(e.PID); return s != "" && s == e.Start }

func (d *demo) running() bool {
	for _, e := range readPIDs(d.path("pids")) {
		if e.alive() {
			return true
		}
	}
	return false
}

// down stops the demo: SIGTERM to the background process, which stops what it started; then
// SIGTERM and, after a grace period, SIGKILL to every recorded process still running.
func (d *demo) down(verbose bool) bool {
	entries := readPIDs(d.path("pids"))
	var live []pidEntry
	for _, e := range entries {
		if e.alive() {
			live = append(live, e)
		}
	}
	if len(live) == 0 {
		if verbose {
			fmt.Println("No demo is running.")
		}
		_ = os.Remove(d.path("pids"))
		return true
	}
	waitGone := func(es []pidEntry, timeout time.Duration) []pidEntry {
		deadline := time.Now().Add(timeout)
		for {
			var still []pidEntry
			for _, e := range es {
				if e.alive() {
					still = append(still, e)
				}
			}
			if len(still) == 0 || time.Now().After(deadline) {
				return still
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The background process first: it stops the components in order.
	if live[0].Name == "demo" {
		_ = syscall.Kill(live[0].PID, syscall.SIGTERM)
		waitGone(live[:1], 60*time.Second)
	}
	still := waitGone(live, 0)
	for _, e := range still {
		_ = syscall.Kill(e.PID, syscall.SIGTERM)
	}
	still = waitGone(still, 15*time.Second)
	for _, e := range still {
		fmt.Fprintf(os.Stderr, "demo: %s (pid %d) ignored SIGTERM: killing it\n", e.Name, e.PID)
		_ = syscall.Kill(e.PID, syscall.SIGKILL)
	}
	still = waitGone(still, 5*time.Second)
	if verbose {
		for _, e := range live {
			if !slices.Contains(still, e) {
				fmt.Printf("stopped %-24s pid %d\n", e.Name, e.PID)
			}
		}
	}
	if len(still) > 0 {
		for _, e := range still {
			fmt.Fprintf(os.Stderr, "demo: %s (pid %d) is still running\n", e.Name, e.PID)
		}
		return false
	}
	_ = os.Remove(d.path("pids"))
	for _, p := range []string{"etcd-data", "pki", "landscape.json", driverName} {
		_ = os.RemoveAll(d.path(p))
	}
	for _, c := range clusters {
		_ = os.Remove(d.path(c.Name + ".kubeconfig"))
	}
	if verbose {
		fmt.Printf("The demo is stopped; its logs and Corefiles stay in %s\n", d.rel(d.dir))
	}
	return true
}

// ---------------------------------------------------------------------------------------------
// serve: the background process that owns the landscape

// landscapeInfo is what serve tells up about the running landscape (.cache/demo/landscape.json).
type landscapeInfo struct {
	EtcdURL     string
	CentralPort int
	Clusters    []clusterInfo
	Names       []nameInfo
	Refused     []refusedInfo
	Metrics     []string
}

type clusterInfo struct {
	Name       string
	Port       int
	Kubeconfig string
}

type nameInfo struct {
	Name, Want string
}

type refusedInfo struct {
	Port      int
	Name, Why string
}

type server struct {
	d        *demo
	began    time.Time
	progress *os.File
	procs    []*child.Process // started by us, in order
	envs     []*envtest.Environment
}

// child is a process the server started.
func (d *demo) serve() int {
	s := &server{d: d, began: time.Now()}
	var err error
	s.progress, err = os.OpenFile(d.path("progress.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctrllog.SetLogger(logr.Discard())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt, syscall.SIGHUP)

	failed := make(chan error, 1)
	go func() { failed <- s.start() }()
	select {
	case err := <-failed:
		if err != nil {
			s.say("FAILED %v", err)
			s.shutdown()
			return 1
		}
		s.say("READY")
	case sig := <-stop:
		fmt.Printf("%s during startup: stopping\n", sig)
		s.shutdown()
		return 1
	}
	sig := <-stop
	fmt.Printf("%s: stopping the landscape\n", sig)
	s.shutdown()
	return 0
}

func (s *server) say(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasPrefix(msg, "READY") && !strings.HasPrefix(msg, "FAILED") {
		msg = fmt.Sprintf("  [%5.1fs] %s", time.Since(s.began).Seconds(), msg)
	}
	fmt.Println(msg) // into demo.log too
	fmt.Fprintln(s.progress, msg)
}

// componentError names the component that failed and its log.
func componentError(component, logFile string, err error) error {
	msg := fmt.Sprintf("%s failed: %v", component, err)
	if logFile != "" {
		msg += fmt.Sprintf("\n  its log: %s\n%s", logFile, indent(testenv.LogTail(logFile, 15)))
	}
	return errors.New(msg)
}

func (s *server) start() error {
	d := s.d
	certs, err := pki.Write(d.path("pki"), 30*24*time.Hour, "central", "eu1", "us1", "admin")
	if err != nil {
		return componentError("certificates", "", err)
	}
	s.say("certificates (a CA, etcd's server certificate, a client certificate per component) in %s", d.rel(d.path("pki")))

	// The central etcd.
	etcdURL := fmt.Sprintf("https://127.0.0.1:%d", etcdPort)
	peer, err := freePort()
	if err != nil {
		return componentError("central etcd", "", err)
	}
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	etcdLog := d.path("etcd-central.log")
	if _, err := s.spawn("etcd-central", etcdLog, filepath.Join(d.root, "bin", "etcd"),
		"--name=central", "--data-dir="+d.path("etcd-data"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=central="+peerURL, "--initial-cluster-state=new",
		"--cert-file="+certs.ServerCertFile, "--key-file="+certs.ServerKeyFile,
		"--trusted-ca-file="+certs.CAFile, "--client-cert-auth=true"); err != nil {
		return componentError("central etcd", etcdLog, err)
	}
	if err := s.waitEtcd(etcdURL, certs, 30*time.Second); err != nil {
		return componentError("central etcd", etcdLog, err)
	}
	s.say("central etcd (TLS, client certificates required) on %s", etcdURL)

	// The workload clusters' API servers.
	crds, err := testenv.GatewayAPICRDs(testenv.CRDStandard)
	if err != nil {
		return componentError("Gateway API CRDs", "", err)
	}
	dnsEndpoints, err := testenv.DNSEndpointCRDs()
	if err != nil {
		return componentError("the DNSEndpoint CRD", "", err)
	}
	crds = append(crds, dnsEndpoints...)
	info := &landscapeInfo{EtcdURL: etcdURL, CentralPort: centralPort}
	rcs := map[string]*rest.Config{}
	for _, c := range clusters {
		rc, kubeconfig, err := s.startKube(c.Name, crds)
		if err != nil {
			return err
		}
		rcs[c.Name] = rc
		info.Clusters = append(info.Clusters, clusterInfo{Name: c.Name, Port: c.Port, Kubeconfig: kubeconfig})
		s.say("cluster %s: kube-apiserver with the Gateway API CRDs at %s (kubeconfig %s)", c.Name, rc.Host, d.rel(kubeconfig))
	}

	// CoreDNS: the central server, then each cluster's.
	tlsEnv := func(who string) map[string]string {
		return map[string]string{
			"GATEWAYDNS_ETCD_ENDPOINTS": etcdURL,
			"GATEWAYDNS_ETCD_CERT":      certs.CertFile(who),
			"GATEWAYDNS_ETCD_KEY":       certs.KeyFile(who),
			"GATEWAYDNS_ETCD_CA":        certs.CAFile,
		}
	}
	metrics, err := s.startCoreDNS("central", "central-tls.Corefile", centralPort, tlsEnv("central"))
	if err != nil {
		return err
	}
	info.Metrics = append(info.Metrics, "central "+metrics)
	s.say("central CoreDNS: gatewaydns serves %s from the central etcd on 127.0.0.1:%d", zone, centralPort)
	for i, c := range clusters {
		env := tlsEnv(c.Name)
		env["GATEWAYDNS_OWNER"] = c.Name
		env["GATEWAYDNS_DOMAIN"] = c.Name + "." + zone
		env["GATEWAYDNS_KUBECONFIG"] = info.Clusters[i].Kubeconfig
		env["GATEWAYDNS_CENTRAL"] = fmt.Sprintf("127.0.0.1:%d", centralPort)
		metrics, err := s.startCoreDNS(c.Name, "workload-tls.Corefile", c.Port, env)
		if err != nil {
			return err
		}
		info.Metrics = append(info.Metrics, c.Name+" "+metrics)
		s.say("cluster %s: CoreDNS on 127.0.0.1:%d: gatewaydns publishes %s.%s (owner %s), forwards %s to the central server",
			c.Name, c.Port, c.Name, zone, c.Name, zone)
	}

	// The sample objects.
	for _, c := range clusters {
		names, refused, err := applySamples(c.Name, rcs[c.Name])
		if err != nil {
			return componentError("applying the sample objects to cluster "+c.Name, "", err)
		}
		info.Names = append(info.Names, names...)
		info.Refused = append(info.Refused, refused...)
	}
	for i := range info.Refused {
		info.Refused[i].Port = clusters[0].Port
	}

	// Every name answered through every cluster's CoreDNS.
	for _, c := range clusters {
		for _, n := range info.Names {
			if err := waitAnswer(c.Port, n.Name, n.Want, 30*time.Second); err != nil {
				return componentError(fmt.Sprintf("cluster %s's CoreDNS (publishing, or forwarding to the central server)", c.Name),
					d.path("coredns-"+c.Name+".log"), err)
			}
		}
	}
	for _, r := range info.Refused {
		if err := waitRefusal(rcs["us1"], r); err != nil {
			return componentError("cluster us1's CoreDNS (refusing a name outside its domain filter)", d.path("coredns-us1.log"), err)
		}
	}
	s.say("every sample name is answered through each cluster's CoreDNS")

	data, _ := json.MarshalIndent(info, "", "  ")
	return os.WriteFile(d.path("landscape.json"), data, 0o644)
}

// spawn starts a process that dies with this one (see package child) and records its PID.
func (s *server) spawn(name, logFile, bin string, args ...string) (*child.Process, error) {
	c, err := child.Start(name, logFile, exec.Command(bin, args...))
	if err != nil {
		return nil, err
	}
	go func() { fmt.Printf("%s exited: %v\n", name, c.Err()) }()
	s.procs = append(s.procs, c)
	if err := appendPID(s.d.path("pids"), c.Cmd.Process.Pid, name, logFile); err != nil {
		return nil, err
	}
	return c, nil
}

func (s *server) waitEtcd(url string, certs *pki.Files, timeout time.Duration) error {
	tc, err := certs.ClientConfig("admin")
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 2 * time.Second}
	c := s.procs[len(s.procs)-1]
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-c.Exited():
			return errors.New("exited while starting")
		default:
		}
		resp, err := hc.Get(url + "/health")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), `"health":"true"`) {
				return nil
			}
			err = fmt.Errorf("%s: %s", resp.Status, body)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not healthy after %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startKube starts a kube-apiserver and its etcd with envtest and records their PIDs.
func (s *server) startKube(name string, crds []*apiextensionsv1.CustomResourceDefinition) (*rest.Config, string, error) {
	d := s.d
	apiLogFile, etcdLogFile := d.path("kube-apiserver-"+name+".log"), d.path("kube-etcd-"+name+".log")
	apiLog, err := os.Create(apiLogFile)
	if err != nil {
		return nil, "", err
	}
	etcdLog, err := os.Create(etcdLogFile)
	if err != nil {
		return nil, "", err
	}
	install := make([]*apiextensionsv1.CustomResourceDefinition, len(crds))
	for i, c := range crds {
		install[i] = c.DeepCopy()
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    filepath.Join(d.root, "bin"),
		CRDs:                     install,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	env.ControlPlane.APIServer = &envtest.APIServer{Path: filepath.Join(d.root, "bin", "kube-apiserver"), Out: apiLog, Err: apiLog}
	env.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(d.root, "bin", "etcd"), Out: etcdLog, Err: etcdLog}
	env.ControlPlane.Etcd.Configure().Set("log-level", "warn")
	before := childPIDs()
	s.envs = append(s.envs, env) // stopped by shutdown even if Start fails half-way
	rc, err := env.Start()
	for _, pid := range childPIDs() {
		if slices.Contains(before, pid) {
			continue
		}
		what, log := "kube-etcd-"+name, etcdLogFile
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.HasPrefix(string(comm), "kube-apiserver") {
			what, log = "kube-apiserver-"+name, apiLogFile
		}
		_ = appendPID(d.path("pids"), pid, what, log)
	}
	if err != nil {
		return nil, "", componentError("cluster "+name+"'s kube-apiserver", apiLogFile, err)
	}
	kubeconfig := d.path(name + ".kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		return nil, "", err
	}
	return rc, kubeconfig, nil
}

// childPIDs lists this process's children.
func childPIDs() []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", os.Getpid()))
	for _, t := range tasks {
		data, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(out, pid) {
				out = append(out, pid)
			}
		}
	}
	return out
}

var (
	envVar         = regexp.MustCompile(`\{\$([A-Z0-9_]+)\}`)
	sidecarPlugins = regexp.MustCompile(`(?m)^(\s*)(health|ready|prometheus)\b[^\n{]*`)
)

// startCoreDNS writes .cache/demo/NAME.Corefile from corefile.d/SOURCE with env filled in and
// the health, ready and metrics listeners on free loopback ports, runs ./coredns with it and
// waits until it is ready. It returns the metrics URL.
func (s *server) startCoreDNS(name, source string, port int, env map[string]string) (string, error) {
	d := s.d
	component := "CoreDNS " + name
	logFile := d.path("coredns-" + name + ".log")
	src, err := os.ReadFile(filepath.Join(d.root, "corefile.d", source))
	if err != nil {
		return "", componentError(component, "", err)
	}
	var missing []string
	corefile := envVar.ReplaceAllStringFunc(string(src), func(m string) string {
		k := envVar.FindStringSubmatch(m)[1]
		v, ok := env[k]
		if !ok {
			missing = append(missing, k)
		}
		return v
	})
	if len(missing) > 0 {
		return "", componentError(component, "", fmt.Errorf("corefile.d/%s uses %v, which the demo does not set", source, missing))
	}
	addrs := map[string]string{}
	for _, p := range []string{"health", "ready", "prometheus"} {
		fp, err := freePort()
		if err != nil {
			return "", componentError(component, "", err)
		}
		addrs[p] = fmt.Sprintf("127.0.0.1:%d", fp)
	}
	corefile = sidecarPlugins.ReplaceAllStringFunc(corefile, func(line string) string {
		m := sidecarPlugins.FindStringSubmatch(line)
		return m[1] + m[2] + " " + addrs[m[2]]
	})
	if name == "central" {
		// Zone transfers to anyone on loopback, so that `dig AXFR` shows the zone; a landscape
		// names its secondaries (corefile.d/primary.Corefile).
		corefile = strings.Replace(corefile, "    gatewaydns {", "    transfer {\n        to *\n    }\n    gatewaydns {", 1)
	}
	corefile = fmt.Sprintf("# Generated by hack/demo from corefile.d/%s for the CoreDNS of %s.\n%s", source, name, corefile)
	conf := d.path(name + ".Corefile")
	if err := os.WriteFile(conf, []byte(corefile), 0o644); err != nil {
		return "", componentError(component, "", err)
	}
	c, err := s.spawn("coredns-"+name, logFile, filepath.Join(d.root, "coredns"), "-conf", conf, "-dns.port", strconv.Itoa(port))
	if err != nil {
		return "", componentError(component, logFile, err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-c.Exited():
			return "", componentError(component, logFile, errors.New("exited while starting"))
		default:
		}
		resp, err := http.Get("http://" + addrs["ready"] + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return "http://" + addrs["prometheus"] + "/metrics", nil
			}
		}
		if time.Now().After(deadline) {
			return "", componentError(component, logFile, errors.New("not ready after 90s"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shutdown stops what start started, last first.
func (s *server) shutdown() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		c := s.procs[i]
		if !strings.HasPrefix(c.Name, "coredns-") {
			continue
		}
		c.Stop(syscall.SIGTERM, 15*time.Second)
	}
	for i := len(s.envs) - 1; i >= 0; i-- {
		if err := s.envs[i].Stop(); err != nil {
			fmt.Printf("stopping a kube-apiserver: %v\n", err)
		}
	}
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].Stop(syscall.SIGTERM, 15*time.Second)
	}
	fmt.Println("stopped")
}

// ---------------------------------------------------------------------------------------------
// the sample objects: what a gateway controller and an ingress controller would leave behind

// applySamples creates the sample objects of a cluster, with their status set, and returns the
// names they publish and the names that must be refused.
func applySamples(cluster string, rc *rest.Config) ([]nameInfo, []refusedInfo, error) {
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	gw, err := gwclient.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, ns := range []string{"infra", "shop"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return nil, nil, err
		}
	}
	domain := cluster + "." + zone
	switch cluster {
	case "eu1":
		if err := createGateway(ctx, gw, "public", gatewayv1.HTTPProtocolType, 80, "*."+domain, "203.0.113.10"); err != nil {
			return nil, nil, err
		}
		if err := createGateway(ctx, gw, "passthrough", gatewayv1.TLSProtocolType, 443, "*."+domain, "203.0.113.11"); err != nil {
			return nil, nil, err
		}
		if err := createHTTPRoute(ctx, gw, "web", "public", "web."+domain); err != nil {
			return nil, nil, err
		}
		if err := createTLSRoute(ctx, gw, "db", "passthrough", "db."+domain); err != nil {
			return nil, nil, err
		}
		if err := createIngress(ctx, kube, "legacy", "legacy."+domain, "203.0.113.12"); err != nil {
			return nil, nil, err
		}
		if err := createLoadBalancerService(ctx, kube, "mqtt", "mqtt."+domain, "203.0.113.13"); err != nil {
			return nil, nil, err
		}
		if err := createDNSEndpoint(ctx, rc, "vpn."+domain, "203.0.113.14"); err != nil {
			return nil, nil, err
		}
		return []nameInfo{
			{"web." + domain, "203.0.113.10"}, {"db." + domain, "203.0.113.11"}, {"legacy." + domain, "203.0.113.12"},
			{"mqtt." + domain, "203.0.113.13"}, {"vpn." + domain, "203.0.113.14"},
		}, nil, nil
	default:
		// Its listener takes any hostname: only gatewaydns's domain filter keeps this cluster
		// inside its own subdomain.
		if err := createGateway(ctx, gw, "public", gatewayv1.HTTPProtocolType, 80, "", "198.51.100.10"); err != nil {
			return nil, nil, err
		}
		if err := createHTTPRoute(ctx, gw, "api", "public", "api."+domain); err != nil {
			return nil, nil, err
		}
		if err := createIngress(ctx, kube, "shop", "shop."+domain, "198.51.100.20"); err != nil {
			return nil, nil, err
		}
		if err := createHTTPRoute(ctx, gw, "hijack", "public", "hijack.eu1."+zone); err != nil {
			return nil, nil, err
		}
		return []nameInfo{{"api." + domain, "198.51.100.10"}, {"shop." + domain, "198.51.100.20"}},
			[]refusedInfo{{Name: "hijack.eu1." + zone, Why: cluster + "'s HTTPRoute shop/hijack asks for a name in eu1's subdomain: refused (Warning Event DomainFilter on the route), never answered"}},
			nil
	}
}

func createGateway(ctx context.Context, gw gwclient.Interface, name string, protocol gatewayv1.ProtocolType, port int32, hostname, address string) error {
	all := gatewayv1.NamespacesFromAll
	l := gatewayv1.Listener{Name: "l", Protocol: protocol, Port: port,
		AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &all}}}
	if hostname != "" {
		h := gatewayv1.Hostname(hostname)
		l.Hostname = &h
	}
	if protocol == gatewayv1.TLSProtocolType {
		mode := gatewayv1.TLSModePassthrough
		l.TLS = &gatewayv1.ListenerTLSConfig{Mode: &mode}
	}
	g := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: name},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: "demo", Listeners: []gatewayv1.Listener{l}},
	}
	g, err := gw.GatewayV1().Gateways("infra").Create(ctx, g, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("Gateway infra/%s: %w", name, err)
	}
	return setGatewayAddress(ctx, gw, g, address)
}

func setGatewayAddress(ctx context.Context, gw gwclient.Interface, g *gatewayv1.Gateway, address string) error {
	ipType := gatewayv1.IPAddressType
	g.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Type: &ipType, Value: address}}
	if _, err := gw.GatewayV1().Gateways(g.Namespace).UpdateStatus(ctx, g, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("Gateway %s/%s status: %w", g.Namespace, g.Name, err)
	}
	return nil
}

func parentRef(gateway string) gatewayv1.ParentReference {
	ns := gatewayv1.Namespace("infra")
	return gatewayv1.ParentReference{Namespace: &ns, Name: gatewayv1.ObjectName(gateway)}
}

func accepted(ref gatewayv1.ParentReference, generation int64) []gatewayv1.RouteParentStatus {
	return []gatewayv1.RouteParentStatus{{
		ParentRef:      ref,
		ControllerName: controller,
		Conditions: []metav1.Condition{{
			Type: string(gatewayv1.RouteConditionAccepted), Status: metav1.ConditionTrue,
			Reason: string(gatewayv1.RouteReasonAccepted), ObservedGeneration: generation,
			LastTransitionTime: metav1.Now(),
		}},
	}}
}

func createHTTPRoute(ctx context.Context, gw gwclient.Interface, name, gateway, hostname string) error {
	ref := parentRef(gateway)
	r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
	r.Spec.ParentRefs = []gatewayv1.ParentReference{ref}
	r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(hostname)}
	r, err := gw.GatewayV1().HTTPRoutes("shop").Create(ctx, r, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("HTTPRoute shop/%s: %w", name, err)
	}
	r.Status.Parents = accepted(ref, r.Generation)
	if _, err := gw.GatewayV1().HTTPRoutes("shop").UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("HTTPRoute shop/%s status: %w", name, err)
	}
	return nil
}

func createTLSRoute(ctx context.Context, gw gwclient.Interface, name, gateway, hostname string) error {
	ref := parentRef(gateway)
	port := gatewayv1.PortNumber(5432)
	r := &gatewayv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
	r.Spec.ParentRefs = []gatewayv1.ParentReference{ref}
	r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(hostname)}
	r.Spec.Rules = []gatewayv1.TLSRouteRule{{BackendRefs: []gatewayv1.BackendRef{{
		BackendObjectReference: gatewayv1.BackendObjectReference{Name: "db", Port: &port},
	}}}}
	r, err := gw.GatewayV1().TLSRoutes("shop").Create(ctx, r, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("TLSRoute shop/%s: %w", name, err)
	}
	r.Status.Parents = accepted(ref, r.Generation)
	if _, err := gw.GatewayV1().TLSRoutes("shop").UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("TLSRoute shop/%s status: %w", name, err)
	}
	return nil
}

// createDNSEndpoint creates external-dns's DNSEndpoint for a name that no other object
// describes: an A record, and a TXT record beside it.
func createDNSEndpoint(ctx context.Context, rc *rest.Config, host, ip string) error {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
		"metadata": map[string]any{"namespace": "shop", "name": "vpn"},
		"spec": map[string]any{"endpoints": []any{
			map[string]any{"dnsName": host, "recordType": "A", "targets": []any{ip}},
			map[string]any{"dnsName": host, "recordType": "TXT", "targets": []any{"owner=network-team"}},
		}},
	}}
	gvr := schema.GroupVersionResource{Group: "externaldns.k8s.io", Version: "v1alpha1", Resource: "dnsendpoints"}
	if _, err := dyn.Resource(gvr).Namespace("shop").Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("DNSEndpoint shop/vpn: %w", err)
	}
	return nil
}

// createLoadBalancerService creates a LoadBalancer Service named in external-dns's hostname
// annotation and gives it the address a cloud provider would.
func createLoadBalancerService(ctx context.Context, kube kubernetes.Interface, name, host, ip string) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name,
			Annotations: map[string]string{"external-dns.kubernetes.io/hostname": host}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "mqtts", Port: 8883, Protocol: corev1.ProtocolTCP}}},
	}
	svc, err := kube.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("Service shop/%s: %w", name, err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	if _, err := kube.CoreV1().Services("shop").UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("Service shop/%s status: %w", name, err)
	}
	return nil
}

func createIngress(ctx context.Context, kube kubernetes.Interface, name, host, ip string) error {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: host}}}}
	ing, err := kube.NetworkingV1().Ingresses("shop").Create(ctx, ing, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("Ingress shop/%s: %w", name, err)
	}
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: ip}}
	if _, err := kube.NetworkingV1().Ingresses("shop").UpdateStatus(ctx, ing, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("Ingress shop/%s status: %w", name, err)
	}
	return nil
}

// setAddress changes the address of Gateway infra/public in a running demo's cluster, as its
// controller would after its load balancer changed.
func (d *demo) setAddress(cluster, address string) error {
	if net.ParseIP(address) == nil {
		return fmt.Errorf("%q is not an IP address", address)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", d.path(cluster+".kubeconfig"))
	if err != nil {
		return fmt.Errorf("cluster %s: %v (is the demo running? make demo)", cluster, err)
	}
	gw, err := gwclient.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := gw.GatewayV1().Gateways("infra").Get(ctx, "public", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("cluster %s: %v (is the demo running? make demo)", cluster, err)
	}
	if err := setGatewayAddress(ctx, gw, g, address); err != nil {
		return err
	}
	fmt.Printf("cluster %s: Gateway infra/public now has address %s\n", cluster, address)
	return nil
}

// waitAnswer asks 127.0.0.1:port for name until the answer is exactly want.
func waitAnswer(port int, name, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), dns.TypeA)
		r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1 {
			if a, ok := r.Answer[0].(*dns.A); ok && a.A.String() == want {
				return nil
			}
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("%s %v", dns.RcodeToString[r.Rcode], r.Answer)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("127.0.0.1:%d does not answer %s with %s after %s (last: %s)", port, name, want, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitRefusal waits for the Warning Event on the refused route.
func waitRefusal(rc *rest.Config, r refusedInfo) error {
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := kube.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
		if err == nil {
			for _, e := range list.Items {
				if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == "hijack" && e.Reason == "DomainFilter" {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no DomainFilter Warning Event on HTTPRoute shop/hijack (asking for %s) after 30s", r.Name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ---------------------------------------------------------------------------------------------
// helpers

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
