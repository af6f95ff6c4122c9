// Package publish tests the publish role end to end: workload clusters' writers publishing
// their objects into the central etcd (writer_test.go), owners sharing or claiming names, the
// DNSEndpoint and CRD sources, the Events and status on the objects, leader takeover, and the
// central server answering what they wrote.
package publish

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/kubesource"
)

// TestPublishesClusterObjectsAndAnswersThem runs corefile.d/all-in-one.Corefile (writer and
// server in one stanza) on the built binary against a real kube-apiserver and a real etcd:
// Gateway API, Ingress and Service objects become records owned by the cluster, and every change
// is answered within a second.
func TestPublishesClusterObjectsAndAnswersThem(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Namespace("shop")
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "*.eu1.openmcp.cluster", "203.0.113.10")
	k8s.HTTPRoute("shop", "web", "infra", "public", "web.eu1.openmcp.cluster")

	p := e2e.RunCorefile(t, "all-in-one.Corefile",
		"GATEWAYDNS_ETCD_ENDPOINTS="+etcd.ClientURL,
		"GATEWAYDNS_OWNER=eu1",
		"GATEWAYDNS_DOMAIN=eu1.openmcp.cluster",
		"GATEWAYDNS_KUBECONFIG="+kube.KubeconfigFile)
	p.WaitReady(t, 60*time.Second)
	e2e.WaitFor(t, 10*time.Second, p.DNS, "web.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.10"))

	// The record in etcd is the SkyDNS layout, owned by this cluster, naming its object.
	resp, err := etcd.Client(t).Get(context.Background(), "/skydns/cluster/openmcp/eu1/web/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("want one key for web.eu1, got %v (%v)", resp, err)
	}
	var v struct {
		Host        string   `json:"host"`
		Owner       string   `json:"owner"`
		TargetStrip int      `json:"targetstrip"`
		Sources     []string `json:"sources"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &v); err != nil || v.Host != "203.0.113.10" || v.Owner != "eu1" || v.TargetStrip != 1 || len(v.Sources) != 1 || v.Sources[0] != "HTTPRoute/shop/web" {
		t.Fatalf("value %s (%v)", resp.Kvs[0].Value, err)
	}

	within := func(what string, limit time.Duration, change func(), name string, cond func(*dns.Msg) bool) {
		t.Helper()
		start := time.Now()
		change()
		e2e.WaitFor(t, 10*time.Second, p.DNS, name, dns.TypeA, cond)
		if took := time.Since(start); took > limit {
			t.Errorf("%s: answered after %s, want within %s", what, took, limit)
		} else {
			t.Logf("%s: answered after %s", what, took)
		}
	}
	within("new route", time.Second, func() { k8s.HTTPRoute("shop", "api", "infra", "public", "api.eu1.openmcp.cluster") },
		"api.eu1.openmcp.cluster.", e2e.AnswersWith("203.0.113.10"))
	within("Gateway address change", time.Second, func() { k8s.SetGatewayAddresses("infra", "public", "203.0.113.20", "203.0.113.21") },
		"web.eu1.openmcp.cluster.", e2e.AnswersWith("203.0.113.20", "203.0.113.21"))
	within("route deleted", time.Second, func() { k8s.DeleteHTTPRoute("shop", "api") },
		"api.eu1.openmcp.cluster.", e2e.IsNXDOMAIN)
	within("Ingress", time.Second, func() { k8s.Ingress("shop", "legacy", "legacy.eu1.openmcp.cluster", "203.0.113.30") },
		"legacy.eu1.openmcp.cluster.", e2e.AnswersWith("203.0.113.30"))

	// A LoadBalancer Service is reported while its load balancer is pending, then answered over
	// UDP and TCP within a second of getting an address.
	k8s.LoadBalancerService("shop", "api-lb", "lb.eu1.openmcp.cluster")
	k8s.WaitWarningEvents("shop", "Service", "api-lb", "NoTargets", kubesource.DefaultPendingGrace+10*time.Second)
	within("LoadBalancer Service", time.Second, func() { k8s.SetLoadBalancerIngress("shop", "api-lb", "203.0.113.50", "2001:db8::50") },
		"lb.eu1.openmcp.cluster.", e2e.AnswersWith("203.0.113.50"))
	for _, proto := range []string{"udp", "tcp"} {
		if r := e2e.Ask(t, proto, p.DNS, "lb.eu1.openmcp.cluster.", dns.TypeA); !e2e.AnswersWith("203.0.113.50")(r) {
			t.Errorf("%s A lb.eu1: %v", proto, r)
		}
		if r := e2e.Ask(t, proto, p.DNS, "lb.eu1.openmcp.cluster.", dns.TypeAAAA); !e2e.AnswersWith("2001:db8::50")(r) {
			t.Errorf("%s AAAA lb.eu1: %v", proto, r)
		}
	}

	// An Ingress for a public name, outside the zone (external-dns's, say), is another
	// controller's: left alone without a word. Created first, its Events would come first.
	k8s.Ingress("shop", "public-site", "www.example.com", "198.51.100.7")
	// A name outside the cluster's subdomain is refused and reported on its route (through a
	// Gateway whose listener takes any hostname, so that only the domain filter stops it).
	k8s.Gateway("infra", "open", gatewayv1.HTTPProtocolType, 80, "", "203.0.113.40")
	k8s.HTTPRoute("shop", "intruder", "infra", "open", "web.us1.openmcp.cluster")
	k8s.WaitWarningEvents("shop", "HTTPRoute", "intruder", "DomainFilter", 10*time.Second)
	if evs := k8s.WarningEvents("shop", "Ingress", "public-site", "DomainFilter"); len(evs) > 0 {
		t.Errorf("another controller's Ingress got a Warning: %s", evs[0].Message)
	}
	if r := e2e.Ask(t, "udp", p.DNS, "web.us1.openmcp.cluster.", dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Fatalf("a name outside the domain filter was published: %v", r)
	}
	// A Service whose annotation names an invalid hostname is reported on the Service.
	k8s.LoadBalancerService("shop", "odd-lb", "bad_name.eu1.openmcp.cluster", "203.0.113.51")
	k8s.WaitWarningEvents("shop", "Service", "odd-lb", "InvalidHostname", 10*time.Second)
	metrics, _ := e2e.HTTPGet("http://" + p.Metrics + "/metrics")
	e2e.CheckSeries(t, metrics, `coredns_gatewaydns_writer_leader{owner="eu1"}`, 1)
	e2e.CheckExported(t, metrics, `coredns_gatewaydns_source_rejections_total{cause="DomainFilter",kind="HTTPRoute",owner="eu1"}`)
	// Each rejection counted once while it lasted, however often its Service was recomputed.
	e2e.CheckSeries(t, metrics, `coredns_gatewaydns_source_rejections_total{cause="NoTargets",kind="Service",owner="eu1"}`, 1)
	e2e.CheckSeries(t, metrics, `coredns_gatewaydns_source_rejections_total{cause="InvalidHostname",kind="Service",owner="eu1"}`, 1)
}

// TestWorkloadPublishesAndForwardsToCentral runs the two shapes of a landscape on the built
// binary: a workload cluster's CoreDNS (corefile.d/workload.Corefile: publish-only, forward)
// and the central server (corefile.d/central.Corefile). A route and an annotated LoadBalancer
// Service in the workload cluster are answered by the workload's own CoreDNS through the
// central server.
func TestWorkloadPublishesAndForwardsToCentral(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "", "203.0.113.50")

	central := e2e.RunCorefile(t, "central.Corefile", "GATEWAYDNS_ETCD_ENDPOINTS="+etcd.ClientURL)
	central.WaitReady(t, 30*time.Second)
	workload := e2e.RunCorefile(t, "workload.Corefile",
		"GATEWAYDNS_ETCD_ENDPOINTS="+etcd.ClientURL,
		"GATEWAYDNS_OWNER=eu1",
		"GATEWAYDNS_DOMAIN=eu1.openmcp.cluster",
		"GATEWAYDNS_KUBECONFIG="+kube.KubeconfigFile,
		"GATEWAYDNS_CENTRAL="+central.DNS)
	workload.WaitReady(t, 60*time.Second)

	start := time.Now()
	k8s.HTTPRoute("infra", "portal", "infra", "public", "portal.eu1.openmcp.cluster")
	e2e.WaitFor(t, 10*time.Second, workload.DNS, "portal.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.50"))
	t.Logf("route created -> answered by the workload's CoreDNS through the central server: %s", time.Since(start))
	for _, netw := range []string{"udp", "tcp"} {
		if r := e2e.Ask(t, netw, central.DNS, "portal.eu1.openmcp.cluster.", dns.TypeA); !e2e.AnswersWith("203.0.113.50")(r) {
			t.Errorf("central over %s: %v", netw, r)
		}
	}
	// The shipped stanza names the service source: an annotated LoadBalancer Service is
	// answered, not NXDOMAIN as with the default sources.
	k8s.LoadBalancerService("infra", "api-lb", "lb.eu1.openmcp.cluster", "203.0.113.51")
	e2e.WaitFor(t, 10*time.Second, workload.DNS, "lb.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.51"))
}
