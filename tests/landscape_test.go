package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/dnscheck"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// TestLandscape runs the shape of `make demo` on the built binary: a central etcd over TLS with
// client certificates, two workload clusters (real kube-apiservers) eu1 and us1, the central
// server (corefile.d/central-tls.Corefile) and each cluster's CoreDNS
// (corefile.d/workload-tls.Corefile: publish its names, forward the zone to the central server).
// Routes, an Ingress, an annotated LoadBalancer Service and a DNSEndpoint publish, and the
// central server's zone transfer holds them all between its SOA records.
func TestLandscape(t *testing.T) {
	start := time.Now()
	etcd := testenv.StartEtcd(t, testenv.WithEtcdTLS())
	tlsEnv := []string{
		"GATEWAYDNS_ETCD_ENDPOINTS=" + etcd.ClientURL,
		"GATEWAYDNS_ETCD_CERT=" + etcd.TLS.ClientCertFile,
		"GATEWAYDNS_ETCD_KEY=" + etcd.TLS.ClientKeyFile,
		"GATEWAYDNS_ETCD_CA=" + etcd.TLS.CAFile,
	}
	// The central server as make demo runs it: corefile.d/central-tls.Corefile with zone
	// transfers to anyone on loopback, so that the zone can be taken as the demo prints it.
	centralSrc, err := os.ReadFile(filepath.Join("..", "corefile.d", "central-tls.Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	central := corednsproc.Start(t, "central-tls.Corefile",
		strings.Replace(string(centralSrc), "    gatewaydns {", "    transfer {\n        to *\n    }\n    gatewaydns {", 1), tlsEnv...)

	type cluster struct {
		name string
		k8s  *gatewayfixture.Cluster
		dns  *corednsproc.Process
	}
	newCluster := func(name, gwAddress string) *cluster {
		kube := testenv.StartKubeAPIServer(t)
		kube.InstallDNSEndpointCRD(t)
		k8s := gatewayfixture.New(t, kube.Config)
		k8s.Namespace("infra")
		k8s.Namespace("shop")
		// Its listener takes any hostname: only the domain filter decides what is published.
		k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "", gwAddress)
		p := e2e.RunCorefile(t, "workload-tls.Corefile", append(slices.Clone(tlsEnv),
			"GATEWAYDNS_OWNER="+name,
			"GATEWAYDNS_DOMAIN="+name+".openmcp.cluster",
			"GATEWAYDNS_KUBECONFIG="+kube.KubeconfigFile,
			"GATEWAYDNS_CENTRAL="+central.DNS)...)
		return &cluster{name: name, k8s: k8s, dns: p}
	}
	eu1 := newCluster("eu1", "203.0.113.10")
	us1 := newCluster("us1", "198.51.100.10")
	central.WaitReady(t, 30*time.Second)
	eu1.dns.WaitReady(t, 60*time.Second)
	us1.dns.WaitReady(t, 60*time.Second)
	t.Logf("landscape up in %s", time.Since(start).Round(time.Millisecond))
	servers := map[string]string{"central": central.DNS, "eu1": eu1.dns.DNS, "us1": us1.dns.DNS}

	// known holds every name published and its answer; expectEverywhere waits until every
	// server answers it so.
	known := map[string]string{}
	expectEverywhere := func(timeout time.Duration, name string, cond func(*dns.Msg) bool) {
		t.Helper()
		for _, who := range []string{"eu1", "us1", "central"} {
			e2e.WaitFor(t, timeout, servers[who], name, dns.TypeA, cond)
		}
	}

	// Names from both clusters resolve through either cluster's CoreDNS.
	eu1.k8s.HTTPRoute("shop", "web", "infra", "public", "web.eu1.openmcp.cluster")
	eu1.k8s.HTTPRoute("shop", "old", "infra", "public", "old.eu1.openmcp.cluster")
	us1.k8s.HTTPRoute("shop", "api", "infra", "public", "api.us1.openmcp.cluster")
	us1.k8s.Ingress("shop", "legacy", "legacy.us1.openmcp.cluster", "198.51.100.20")
	// As in make demo: an annotated LoadBalancer Service and a DNSEndpoint, published because
	// workload-tls.Corefile names the service and crd sources.
	eu1.k8s.LoadBalancerService("shop", "mqtt", "mqtt.eu1.openmcp.cluster", "203.0.113.13")
	eu1.k8s.DNSEndpoint("shop", "vpn",
		gatewayfixture.Endpoint{DNSName: "vpn.eu1.openmcp.cluster", RecordType: "A", TTL: 60, Targets: []string{"203.0.113.14"}},
		gatewayfixture.Endpoint{DNSName: "vpn.eu1.openmcp.cluster", RecordType: "TXT", TTL: 60, Targets: []string{"owner=network-team"}})
	known["web.eu1.openmcp.cluster."] = "203.0.113.10"
	known["old.eu1.openmcp.cluster."] = "203.0.113.10"
	known["api.us1.openmcp.cluster."] = "198.51.100.10"
	known["legacy.us1.openmcp.cluster."] = "198.51.100.20"
	known["mqtt.eu1.openmcp.cluster."] = "203.0.113.13"
	known["vpn.eu1.openmcp.cluster."] = "203.0.113.14"
	for name, ip := range known {
		expectEverywhere(10*time.Second, name, e2e.AnswersWith(ip))
	}
	// The whole zone by transfer from the central server, as make demo prints it: between its
	// SOA records, every name published.
	rrs, err := dnscheck.Transfer(central.DNS, "openmcp.cluster")
	if err == nil {
		err = dnscheck.CompleteTransfer("openmcp.cluster", rrs)
	}
	if err != nil {
		t.Fatalf("AXFR from the central server: %v\n%v", err, rrs)
	}
	for name, ip := range known {
		if !slices.ContainsFunc(rrs, func(rr dns.RR) bool { a, ok := rr.(*dns.A); return ok && a.Hdr.Name == name && a.A.String() == ip }) {
			t.Errorf("the transfer lacks %s A %s: %v", name, ip, rrs)
		}
	}
	for _, c := range []*cluster{eu1, us1} {
		for name, ip := range known {
			if r := e2e.Ask(t, "tcp", c.dns.DNS, name, dns.TypeA); !e2e.AnswersWith(ip)(r) {
				t.Errorf("%s over TCP: A %s: %v", c.name, name, r)
			}
		}
	}

	// A Gateway address change in eu1 reaches the answers in both clusters, fast.
	const changes = 50
	delays := make([]time.Duration, 0, changes)
	for i := range changes {
		ip := fmt.Sprintf("203.0.113.%d", 100+i)
		began := time.Now()
		eu1.k8s.SetGatewayAddresses("infra", "public", ip)
		pending := []string{eu1.dns.DNS, us1.dns.DNS}
		for len(pending) > 0 {
			if time.Since(began) > 10*time.Second {
				t.Fatalf("change %d (%s) not answered by %v within 10s", i, ip, pending)
			}
			r, err := e2e.Exchange("udp", pending[0], "web.eu1.openmcp.cluster.", dns.TypeA)
			if err == nil && e2e.AnswersWith(ip)(r) {
				pending = pending[1:]
				continue
			}
			time.Sleep(2 * time.Millisecond)
		}
		delays = append(delays, time.Since(began))
	}
	known["web.eu1.openmcp.cluster."] = fmt.Sprintf("203.0.113.%d", 100+changes-1)
	known["old.eu1.openmcp.cluster."] = known["web.eu1.openmcp.cluster."]
	slices.Sort(delays)
	p50, p99 := delays[len(delays)/2], delays[(len(delays)*99+99)/100-1]
	t.Logf("Gateway address change -> answered in both clusters, over %d changes: p50 %s, p99 %s, min %s",
		changes, p50.Round(time.Microsecond), p99.Round(time.Microsecond), delays[0].Round(time.Microsecond))
	if p99 >= time.Second {
		t.Errorf("p99 propagation %s, want < 1s", p99)
	}

	// Deleting a route removes its name.
	began := time.Now()
	eu1.k8s.DeleteHTTPRoute("shop", "old")
	delete(known, "old.eu1.openmcp.cluster.")
	expectEverywhere(5*time.Second, "old.eu1.openmcp.cluster.", e2e.IsNXDOMAIN)
	t.Logf("route deleted -> NXDOMAIN everywhere: %s", time.Since(began).Round(time.Millisecond))

	// eu1 cannot publish into us1's subdomain: refused with a Warning Event, never answered.
	eu1.k8s.HTTPRoute("shop", "intruder", "infra", "public", "intruder.us1.openmcp.cluster")
	// eu1's route asking for a name in us1's subdomain is told so.
	eu1.k8s.WaitWarningEvents("shop", "HTTPRoute", "intruder", "DomainFilter", 10*time.Second)
	notAnswered := func(when string) {
		t.Helper()
		for who, addr := range servers {
			if r := e2e.Ask(t, "udp", addr, "intruder.us1.openmcp.cluster.", dns.TypeA); !e2e.IsNXDOMAIN(r) {
				t.Errorf("%s: %s answers eu1's name in us1's subdomain: %v", when, who, r)
			}
		}
	}
	notAnswered("after the Event")

	// With etcd down, every known name is still answered, by the central server and through
	// both clusters.
	etcd.Stop()
	downAt := time.Now()
	for who, addr := range servers {
		for name, ip := range known {
			if r := e2e.Ask(t, "udp", addr, name, dns.TypeA); !e2e.AnswersWith(ip)(r) {
				t.Errorf("etcd down: %s: A %s: want %s, got %v", who, name, ip, r)
			}
		}
	}
	// Changes made while etcd is down: a new route in us1, a new address in eu1.
	us1.k8s.HTTPRoute("shop", "fresh", "infra", "public", "fresh.us1.openmcp.cluster")
	eu1.k8s.SetGatewayAddresses("infra", "public", "203.0.113.200")
	known["fresh.us1.openmcp.cluster."] = "198.51.100.10"
	known["web.eu1.openmcp.cluster."] = "203.0.113.200"
	time.Sleep(time.Second) // the writers try, and fail, meanwhile
	if r := e2e.Ask(t, "udp", central.DNS, "web.eu1.openmcp.cluster.", dns.TypeA); !e2e.AnswersWith("203.0.113.149")(r) {
		t.Errorf("etcd down: the central server should keep the last good answer: %v", r)
	}
	t.Logf("answered from memory while etcd was down for %s", time.Since(downAt).Round(time.Millisecond))

	// etcd back: publishing resumes and nothing made meanwhile is lost.
	etcd.Restart()
	began = time.Now()
	for name, ip := range known {
		expectEverywhere(30*time.Second, name, e2e.AnswersWith(ip))
	}
	t.Logf("etcd restarted -> the changes made while it was down answered everywhere: %s", time.Since(began).Round(time.Millisecond))
	notAnswered("after the etcd restart")
	resp, err := etcd.Client(t).Get(context.Background(), "/skydns/cluster/openmcp/us1/intruder/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 0 {
		t.Errorf("eu1's name in us1's subdomain is in etcd: %v %v", resp, err)
	}
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}
