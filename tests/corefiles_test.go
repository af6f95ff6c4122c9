package tests

import (
	"context"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// createService creates a ClusterIP Service and returns the address the API server gave it.
func createService(t *testing.T, k8s *gatewayfixture.Cluster, namespace, name string) string {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	svc, err := k8s.Kube.CoreV1().Services(namespace).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		t.Fatalf("Service %s/%s got no cluster IP", namespace, name)
	}
	return svc.Spec.ClusterIP
}

// TestCorefilesClusterDNS runs corefile.d/cluster-dns.Corefile (kubeadm's CoreDNS Corefile,
// stock plugins only) on the built binary against a real kube-apiserver: Services answer as
// from the stock image.
func TestCorefilesClusterDNS(t *testing.T) {
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("shop")
	ip := createService(t, k8s, "shop", "web")

	p := e2e.RunCorefile(t, "cluster-dns.Corefile", "GATEWAYDNS_KUBECONFIG="+kube.KubeconfigFile)
	p.WaitReady(t, 60*time.Second)
	// The ready plugin can say OK a moment before the DNS listener is up (the kubernetes
	// plugin's startup hook returns on its own poll of the same sync).
	e2e.WaitFor(t, 10*time.Second, p.DNS, "kubernetes.default.svc.cluster.local.", dns.TypeA, e2e.HasAnswer)

	for _, netw := range []string{"udp", "tcp"} {
		if r := e2e.Ask(t, netw, p.DNS, "web.shop.svc.cluster.local.", dns.TypeA); !e2e.AnswersWith(ip)(r) || !r.Authoritative {
			t.Errorf("%s: A web.shop.svc.cluster.local: want %s, got %v", netw, ip, r)
		}
	}
	if r := e2e.Ask(t, "udp", p.DNS, "nothere.shop.svc.cluster.local.", dns.TypeA); !e2e.IsNXDOMAIN(r) {
		t.Errorf("a Service that does not exist should be NXDOMAIN: %v", r)
	}
	// The reverse zone answers the Service's address.
	rev, err := dns.ReverseAddr(ip)
	if err != nil {
		t.Fatal(err)
	}
	r := e2e.Ask(t, "udp", p.DNS, rev, dns.TypePTR)
	if len(r.Answer) != 1 || r.Answer[0].(*dns.PTR).Ptr != "web.shop.svc.cluster.local." {
		t.Errorf("PTR %s: %v", rev, r)
	}
}

// TestCorefilesKubernetesFallthrough runs corefile.d/kubernetes-fallthrough.Corefile (K2s's
// shape) on the built binary against a real kube-apiserver and etcd: the kubernetes plugin
// answers Services, and hands the other cluster.local names to gatewaydns, which answers both
// what this cluster's routes publish and what external-dns wrote.
func TestCorefilesKubernetesFallthrough(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("shop")
	k8s.Namespace("infra")
	ip := createService(t, k8s, "shop", "web")
	k8s.Gateway("infra", "internal", gatewayv1.HTTPProtocolType, 80, "*.apps.cluster.local", "203.0.113.60")
	k8s.HTTPRoute("shop", "portal", "infra", "internal", "portal.apps.cluster.local")
	// A record as external-dns --provider=coredns writes it (no owner): never touched by the
	// writer, answered by gatewaydns.
	cli := etcd.Client(t)
	ctx := context.Background()
	if _, err := cli.Put(ctx, "/skydns/local/cluster/legacy/5d1c0e2a", `{"host":"203.0.113.61","ttl":60,"targetstrip":1}`); err != nil {
		t.Fatal(err)
	}

	p := e2e.RunCorefile(t, "kubernetes-fallthrough.Corefile",
		"GATEWAYDNS_ETCD_ENDPOINTS="+etcd.ClientURL,
		"GATEWAYDNS_OWNER=k2s",
		"GATEWAYDNS_KUBECONFIG="+kube.KubeconfigFile)
	p.WaitReady(t, 60*time.Second)
	e2e.WaitFor(t, 10*time.Second, p.DNS, "kubernetes.default.svc.cluster.local.", dns.TypeA, e2e.HasAnswer)

	// The Corefile caches answers (cache 30), so ask only once the route's record is in etcd.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := cli.Get(ctx, "/skydns/local/cluster/apps/portal/", clientv3.WithPrefix())
		if err == nil && len(resp.Kvs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the route's name was not published into etcd: %v %v", resp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	for _, netw := range []string{"udp", "tcp"} {
		for _, c := range []struct{ name, ip, by string }{
			{"web.shop.svc.cluster.local.", ip, "kubernetes"},
			{"portal.apps.cluster.local.", "203.0.113.60", "gatewaydns (published from the HTTPRoute)"},
			{"legacy.cluster.local.", "203.0.113.61", "gatewaydns (written by external-dns)"},
		} {
			if r := e2e.Ask(t, netw, p.DNS, c.name, dns.TypeA); !e2e.AnswersWith(c.ip)(r) {
				t.Errorf("%s: A %s should be answered by %s with %s: %v", netw, c.name, c.by, c.ip, r)
			}
		}
	}
	if r := e2e.Ask(t, "udp", p.DNS, "nothere.cluster.local.", dns.TypeA); !e2e.IsNXDOMAIN(r) || len(r.Ns) != 1 {
		t.Errorf("a name neither plugin has should be NXDOMAIN with an SOA: %v", r)
	}
	// The kubernetes plugin's own names are not in etcd: the answer above came from the API.
	resp, err := cli.Get(ctx, "/skydns/local/cluster/svc/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 0 {
		t.Errorf("Service names should not be in etcd: %v %v", resp, err)
	}
}
