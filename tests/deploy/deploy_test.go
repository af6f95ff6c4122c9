// Package deploy tests what deploy/ ships: every Kustomize overlay rendered, checked and
// applied to a real kube-apiserver with its RBAC, and its Corefile run as the pod would
// (deploy_test.go, static_test.go, rbac_test.go, writes_test.go); the chart against the
// overlays and its values (chart_test.go, chart_values_test.go); kubeadm's image swap
// (kubeadm_test.go).
package deploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/kustomize"
	"github.com/gatewaydns/gatewaydns/internal/promtext"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// renderOverlay renders deploy/overlays/NAME with internal/kustomize, and, when kubectl is
// installed, checks that its built-in kustomize renders the same objects.
func renderOverlay(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "deploy", "overlays", name)
	objs, err := kustomize.Render(dir)
	if err != nil {
		t.Fatalf("rendering %s: %v", dir, err)
	}
	theirs, err := kustomize.Kubectl(dir)
	switch {
	case errors.Is(err, kustomize.ErrNoKubectl):
	case err != nil:
		t.Fatal(err)
	default:
		diff := kustomize.Diff(objs, theirs)
		for _, d := range diff {
			t.Errorf("%s: %s", name, d)
		}
		if len(diff) == 0 {
			t.Logf("%s: %d objects, the same as kubectl kustomize's", name, len(objs))
		}
	}
	return objs
}

func findObj(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		// A generated ConfigMap carries kustomize's 10-character hash after its name.
		if o.GetKind() == kind && (o.GetName() == name || kind == "ConfigMap" && len(o.GetName()) == len(name)+11 && strings.HasPrefix(o.GetName(), name+"-")) {
			return o
		}
	}
	t.Fatalf("no %s %s in the rendered objects", kind, name)
	return nil
}

// applyObjects creates objs (dry-run only when dryRun), with strict field validation.
func applyObjects(t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured, dryRun bool) {
	t.Helper()
	opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict, FieldManager: "deploy-test"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, o := range objs {
		ri := objectClient(t, cfg, o)
		var err error
		for attempt := 0; ; attempt++ {
			_, err = ri.Create(ctx, o, opts)
			// kube-system is created by the API server shortly after it starts.
			if err != nil && apierrors.IsNotFound(err) && attempt < 50 {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			break
		}
		if err != nil {
			t.Errorf("%s (dry-run %v): refused: %v", kustomize.ID(o), dryRun, err)
		}
	}
}

// TestDeploy renders deploy/overlays/{workload,central}, has a real kube-apiserver accept every
// object (server-side dry-run, strict field validation), proves with RBAC that the
// ServiceAccount can do what CoreDNS and gatewaydns need and nothing more, and runs each
// overlay's Corefile with the built binary under the Deployment's environment and the
// ServiceAccount's permissions: workload publishes and forwards the zone to central, which
// answers it from etcd.
func TestDeploy(t *testing.T) {
	start := time.Now()
	workload := renderOverlay(t, "workload")
	central := renderOverlay(t, "central")
	t.Logf("rendered in %v", time.Since(start).Round(time.Millisecond))
	staticChecks(t, "workload", workload, true)
	staticChecks(t, "central", central, false)
	if t.Failed() {
		return
	}

	k := testenv.StartKubeAPIServer(t)
	k.InstallDNSEndpointCRD(t)
	t.Run("DryRunAccepted", func(t *testing.T) {
		applyObjects(t, k.Config, workload, true)
		applyObjects(t, k.Config, central, true)
	})

	// The workload overlay's RBAC for real, bound to kube-system/coredns; the central overlay's
	// for real too, renamed onto kube-system/coredns-central.
	applyObjects(t, k.Config, rbacOnly(workload), false)
	applyObjects(t, k.Config, renamedRBAC(central, "-central", "coredns-central"), false)
	if t.Failed() {
		return
	}
	workloadSA := k.UserConfig(t, saName, saGroups...)
	centralSA := k.UserConfig(t, "system:serviceaccount:kube-system:coredns-central", saGroups...)

	t.Run("WorkloadRBAC", func(t *testing.T) {
		allowed := slices.Concat(kubernetesPluginReads, gatewaydnsReads(), eventWrites, dnsEndpointStatusWrites)
		checkAccess(t, "workload coredns", workloadSA, allowed, neverAllowed())
		// And the actual lists the informers make, on whatever version is served.
		for _, r := range gatewayResources {
			if err := listAs(t, workloadSA, gatewayGroup, r); err != nil {
				t.Errorf("workload coredns lists %s: %v", r, err)
			}
		}
		for _, gr := range [][2]string{{"networking.k8s.io", "ingresses"}, {"", "namespaces"}, {"", "services"}, {"discovery.k8s.io", "endpointslices"}, {"", "nodes"}, {externalDNSGroup, "dnsendpoints"}} {
			if err := listAs(t, workloadSA, gr[0], gr[1]); err != nil {
				t.Errorf("workload coredns lists %s: %v", gr[1], err)
			}
		}
		for _, gr := range [][2]string{{"", "secrets"}, {"", "configmaps"}, {"", "pods"}} {
			if err := listAs(t, workloadSA, gr[0], gr[1]); !apierrors.IsForbidden(err) {
				t.Errorf("workload coredns lists %s: %v, want forbidden", gr[1], err)
			}
		}
	})
	t.Run("CentralRBAC", func(t *testing.T) {
		var denied []access
		denied = append(denied, neverAllowed()...)
		denied = append(denied, eventWrites...)
		denied = append(denied, dnsEndpointStatusWrites...)
		for _, a := range gatewaydnsReads() {
			if a.resource != "namespaces" {
				denied = append(denied, a)
			}
		}
		checkAccess(t, "central coredns", centralSA, kubernetesPluginReads, denied)
	})
	if t.Failed() {
		return
	}

	t.Run("Corefiles", func(t *testing.T) {
		e := testenv.StartEtcd(t, testenv.WithEtcdTLS())
		certs := etcdCertsDir(t, e)
		c := e.Client(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := c.Put(ctx, "/skydns/cluster/openmcp/us1/shop/5f6e7d8c", `{"host":"198.51.100.7","ttl":60}`); err != nil {
			t.Fatal(err)
		}

		cen, cenZone := runDeployedCorefile(t, "central", central, certs, k.UserKubeconfig(t, "system:serviceaccount:kube-system:coredns-central", saGroups...),
			map[string]string{"GATEWAYDNS_ETCD_ENDPOINTS": e.ClientURL})
		cen.WaitReady(t, 60*time.Second)
		// Every source the shipped roles allow, the opt-in ones too (Services, DNSEndpoints), so
		// that each list, watch and write they grant is made for real.
		wl, _ := runDeployedCorefile(t, "workload", workload, certs, k.UserKubeconfig(t, saName, saGroups...),
			map[string]string{"GATEWAYDNS_ETCD_ENDPOINTS": e.ClientURL, "GATEWAYDNS_CENTRAL": cenZone},
			"sources gateway-httproute gateway-grpcroute gateway-tlsroute gateway-tcproute gateway-udproute ingress service crd")
		wl.WaitReady(t, 60*time.Second)
		t.Logf("both Corefiles ready %v after the test started", time.Since(start).Round(time.Millisecond))

		kubeSvc, err := kubernetes.NewForConfigOrDie(k.Config).CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []*corednsproc.Process{cen, wl} {
			// cluster.local from the kubernetes plugin, with the ServiceAccount's permissions.
			r := e2e.WaitFor(t, 10*time.Second, p.DNS, "kubernetes.default.svc.cluster.local", dns.TypeA, e2e.HasAnswer)
			if a, ok := r.Answer[0].(*dns.A); !ok || a.A.String() != kubeSvc.Spec.ClusterIP {
				t.Errorf("%s: kubernetes.default.svc.cluster.local = %v, want %s", p.DNS, r.Answer, kubeSvc.Spec.ClusterIP)
			}
		}
		// The zone: the workload cluster forwards it to central, which answers from etcd.
		r := e2e.WaitFor(t, 10*time.Second, wl.DNS, "shop.us1.openmcp.cluster", dns.TypeA, e2e.HasAnswer)
		if a, ok := r.Answer[0].(*dns.A); !ok || a.A.String() != "198.51.100.7" {
			t.Errorf("shop.us1.openmcp.cluster via workload: %v", r.Answer)
		}
		// A change in etcd is answered through both.
		if _, err := c.Put(ctx, "/skydns/cluster/openmcp/us1/new/0a0b0c0d", `{"host":"198.51.100.8"}`); err != nil {
			t.Fatal(err)
		}
		e2e.WaitFor(t, 10*time.Second, wl.DNS, "new.us1.openmcp.cluster", dns.TypeA, e2e.HasAnswer)
		// The central zone-only port (the LoadBalancer's target) answers the zone and refuses
		// everything else: no recursion, no cluster.local for whoever reaches it.
		if r := e2e.Ask(t, "udp", cenZone, "shop.us1.openmcp.cluster.", dns.TypeA); !e2e.AnswersWith("198.51.100.7")(r) {
			t.Errorf("central zone port: shop.us1.openmcp.cluster: %v", r)
		}
		for _, name := range []string{"kubernetes.default.svc.cluster.local.", "example.org."} {
			if r := e2e.Ask(t, "udp", cenZone, name, dns.TypeA); r.Rcode != dns.RcodeRefused || len(r.Answer) != 0 {
				t.Errorf("central zone port answers %s: %v, want REFUSED", name, r)
			}
		}
		// The overlay's stanza names the service source, and its RBAC lets it read Services: an
		// annotated LoadBalancer Service in the workload cluster is answered.
		k8s := gatewayfixture.New(t, k.Config)
		k8s.Namespace("shop")
		k8s.LoadBalancerService("shop", "api", "api.eu1.openmcp.cluster", "203.0.113.52")
		e2e.WaitFor(t, 10*time.Second, wl.DNS, "api.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.52"))
		// The workload writer runs: it leads for its owner (the overlay's), with its domain filter.
		deadline := time.Now().Add(20 * time.Second)
		want := `coredns_gatewaydns_writer_leader{owner="prod.platform.eu1"}`
		for {
			body, _ := e2e.HTTPGet("http://" + wl.Metrics + "/metrics")
			if v, _ := promtext.Value(body, want); v == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("workload metrics never show %s", want)
			}
			time.Sleep(100 * time.Millisecond)
		}
		resp, err := c.Get(ctx, "/gatewaydns/leader/prod.platform.eu1/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil || resp.Count != 1 {
			t.Errorf("election key of prod.platform.eu1: count %v, err %v", resp, err)
		}
		checkWritesInTheCluster(t, k.Config, wl)
	})

	// The plain-HTTP variants (TestDeployPlainHTTPOverlaysAreTheTLSOnesWithoutTLS: the same
	// objects without the TLS) against an etcd of an http:// URL: the workload cluster forwards
	// the zone to central, which answers it from etcd.
	t.Run("PlainHTTPCorefiles", func(t *testing.T) {
		began := time.Now()
		e := testenv.StartEtcd(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := e.Client(t).Put(ctx, "/skydns/cluster/openmcp/us1/shop/5f6e7d8c", `{"host":"198.51.100.7","ttl":60}`); err != nil {
			t.Fatal(err)
		}
		cen, cenZone := runDeployedCorefile(t, "central-plain-http", renderOverlay(t, "central-plain-http"), "",
			k.UserKubeconfig(t, "system:serviceaccount:kube-system:coredns-central", saGroups...),
			map[string]string{"GATEWAYDNS_ETCD_ENDPOINTS": e.ClientURL})
		cen.WaitReady(t, 60*time.Second)
		t.Logf("central-plain-http ready after %v", time.Since(began).Round(time.Millisecond))
		wl, _ := runDeployedCorefile(t, "workload-plain-http", renderOverlay(t, "workload-plain-http"), "", k.UserKubeconfig(t, saName, saGroups...),
			map[string]string{"GATEWAYDNS_ETCD_ENDPOINTS": e.ClientURL, "GATEWAYDNS_CENTRAL": cenZone})
		wl.WaitReady(t, 60*time.Second)
		e2e.WaitFor(t, 10*time.Second, wl.DNS, "shop.us1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("198.51.100.7"))
		t.Logf("workload-plain-http ready and answering through central after %v", time.Since(began).Round(time.Millisecond))
		// Their shutdown (the Corefiles' 5s lameduck each) is not what this subtest is about.
		wl.Kill()
		cen.Kill()
	})
	t.Logf("TestDeploy took %v", time.Since(start).Round(time.Millisecond))
}

// etcdCertsDir is the pods' /etc/gatewaydns/etcd (the Secret gatewaydns-etcd), from the test
// etcd's client certificate.
func etcdCertsDir(t *testing.T, e *testenv.Etcd) string {
	t.Helper()
	certs := t.TempDir()
	for name, src := range map[string]string{"ca.crt": e.TLS.CAFile, "tls.crt": e.TLS.ClientCertFile, "tls.key": e.TLS.ClientKeyFile} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(certs, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certs
}

var (
	serverKey53   = regexp.MustCompile(`(?m)^(\S+):53 `)
	serverKey5353 = regexp.MustCompile(`(\S+):5353 \{`)
	healthLine    = regexp.MustCompile(`(?m)^(\s*)health \{`)
	readyLine     = regexp.MustCompile(`(?m)^(\s*)ready$`)
	prometheusLn  = regexp.MustCompile(`(?m)^(\s*)prometheus :9153$`)
	kubernetesLn  = regexp.MustCompile(`(?m)^(\s*)kubernetes cluster\.local[^\n]*\{$`)
	gatewaydnsLn  = regexp.MustCompile(`(?m)^(\s*)gatewaydns \{$`)
	etcdCertsPath = "/etc/gatewaydns/etcd/"
)

// runDeployedCorefile runs the built binary with the Corefile of objs's ConfigMap and the
// environment of its Deployment (overridden by env), changed only where a pod and this test
// differ: loopback ports instead of :53/:8080/:8181/:9153, the certificates' directory, and a
// kubeconfig for the ServiceAccount instead of in-cluster credentials; options are added to
// the gatewaydns stanzas.
//
// It returns the process and the address of the zone-only listener (the Corefile's :5353).
func runDeployedCorefile(t *testing.T, name string, objs []*unstructured.Unstructured, certs, kubeconfig string, env map[string]string, options ...string) (*corednsproc.Process, string) {
	t.Helper()
	cm := findObj(t, objs, "ConfigMap", "coredns")
	corefile, _, _ := unstructured.NestedString(cm.Object, "data", "Corefile")
	p := corednsproc.Prepare(t, name+".Corefile")
	_, port, _ := net.SplitHostPort(p.DNS)
	corefile = serverKey53.ReplaceAllString(corefile, "$1:"+port+" ")
	// The central zone-only listener (:5353) on a port of its own, on the DNS address's host.
	zonePort := fmt.Sprint(corednsproc.FreePort(t))
	corefile = serverKey5353.ReplaceAllString(corefile, "$1:"+zonePort+" {")
	corefile = healthLine.ReplaceAllString(corefile, "${1}health "+p.Health+" {")
	corefile = readyLine.ReplaceAllString(corefile, "${1}ready "+p.Ready)
	corefile = prometheusLn.ReplaceAllString(corefile, "${1}prometheus "+p.Metrics)
	corefile = kubernetesLn.ReplaceAllString(corefile, "$0\n${1}    kubeconfig "+kubeconfig)
	if strings.Contains(corefile, "owner ") {
		corefile = gatewaydnsLn.ReplaceAllString(corefile, "$0\n${1}    kubeconfig "+kubeconfig)
	}
	for _, o := range options {
		corefile = gatewaydnsLn.ReplaceAllString(corefile, "$0\n${1}    "+o)
	}
	corefile = strings.ReplaceAll(corefile, etcdCertsPath, certs+"/")
	vars := containerEnv(t, objs)
	maps.Copy(vars, env)
	var environ []string
	for k, v := range vars {
		environ = append(environ, k+"="+v)
	}
	p.Start(t, corefile, environ...)
	host, _, _ := net.SplitHostPort(p.DNS)
	return p, net.JoinHostPort(host, zonePort)
}
