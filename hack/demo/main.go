// Command demo runs a gatewaydns landscape on loopback (`make demo`, `make demo-down`), built by
// make demo into .cache/bin/gatewaydns-demo:
//
//	.cache/bin/gatewaydns-demo up                      start it in the background, print dig answers, return
//	.cache/bin/gatewaydns-demo set-address CLUSTER IP  change the Gateway infra/public's address in a cluster
//	.cache/bin/gatewaydns-demo down                    stop everything it started, by PID (make demo-down)
//
// The landscape: a central etcd over TLS with client certificates; two workload "clusters",
// eu1 and us1, each a real kube-apiserver (controller-runtime's envtest) with the Gateway API
// CRDs; a central CoreDNS running gatewaydns as the server of openmcp.cluster
// (corefile.d/central-tls.Corefile, with transfer to anyone and explain); and per cluster a CoreDNS running gatewaydns as writer
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
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/freeport"
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
	fmt.Fprintln(os.Stderr, "usage: "+builtDriver+" up|down|set-address CLUSTER IP")
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

// freePort is a loopback port handed to no other process started here (see freeport).
func freePort() (int, error) {
	ports, err := freeport.Take(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
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
