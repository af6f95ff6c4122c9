// serve: the background process that owns the landscape (etcd, the kube-apiservers, the
// CoreDNS servers) and stops it on SIGTERM.

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gatewaydns/gatewaydns/internal/child"
	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/pki"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

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

// serve runs the landscape until SIGTERM: it starts every component, says READY (or FAILED and
// why) in progress.log for `up` to follow, and stops them all on the signal.
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

var envVar = regexp.MustCompile(`\{\$([A-Z0-9_]+)\}`)

// startCoreDNS writes .cache/demo/NAME.Corefile from corefile.d/SOURCE with env filled in and
// the health, ready and metrics listeners on free loopback ports (corednsproc), runs ./coredns
// with it on port and waits until it is ready. It returns the metrics URL.
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
	if name == "central" {
		// Zone transfers to anyone on loopback, so that `dig AXFR` shows the zone; a landscape
		// names its secondaries (corefile.d/primary.Corefile). And explain: `dig CH TXT name`
		// says where an answer comes from (off by default: it names the objects behind the
		// records to whoever asks).
		corefile = strings.Replace(corefile, "    gatewaydns {", "    transfer {\n        to *\n    }\n    gatewaydns {\n        explain", 1)
	}
	corefile = fmt.Sprintf("# Generated by hack/demo from corefile.d/%s for the CoreDNS of %s.\n%s", source, name, corefile)
	// The health, ready and metrics listeners on free loopback ports, the DNS one on port.
	c, err := corednsproc.New("coredns-"+name, port)
	if err != nil {
		return "", componentError(component, "", err)
	}
	cmd, err := c.Command(filepath.Join(d.root, "coredns"), d.path(name+".Corefile"), corefile)
	if err != nil {
		return "", componentError(component, "", err)
	}
	started := time.Now()
	proc, err := s.spawn(c.Name, logFile, cmd.Path, cmd.Args[1:]...)
	if err != nil {
		return "", componentError(component, logFile, err)
	}
	c.Attach(proc, started)
	if _, err := c.AwaitReady(90*time.Second, 50*time.Millisecond); err != nil {
		return "", componentError(component, logFile, err)
	}
	return "http://" + c.Metrics + "/metrics", nil
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
