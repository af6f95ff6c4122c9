package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/promtext"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// questionsOf is how many questions of type qtype p has been asked: the sum of its
// coredns_dns_requests_total over every server block and zone. Each server is asked over
// its own listener, so the count tells whether the node cache asked it, and how often.
func questionsOf(t *testing.T, p *corednsproc.Process, qtype uint16) float64 {
	t.Helper()
	body, code := e2e.HTTPGet("http://" + p.Metrics + "/metrics")
	if code != 200 {
		t.Fatalf("metrics of %s: HTTP %d", p.DNS, code)
	}
	n := 0.0
	for _, s := range promtext.Matching(body, fmt.Sprintf(`coredns_dns_requests_total{type=%q}`, dns.TypeToString[qtype])) {
		n += s.Value
	}
	return n
}

// upstreamCorefile is a stand-in for the node's upstream resolvers, on the built binary: the
// hosts plugin answers example.org.
const upstreamCorefile = `. {
    ready
    prometheus :9153
    hosts {
        198.51.100.3 example.org
    }
}
`

// TestNodeLocalCorefile runs corefile.d/nodelocal.Corefile on the built binary in front of real
// servers, each the built binary too: the central gatewaydns (central.Corefile) answering the
// landscape zone from a real etcd, the cluster DNS (cluster-dns.Corefile: the kubernetes plugin
// on a real kube-apiserver) and an upstream (the hosts plugin). Each name is answered by the
// server the Corefile routes its zone to, which is asked once however often the pods ask (the
// others not at all), and a change in etcd reaches the pods once the landscape zone's 5s cache
// lets it.
func TestNodeLocalCorefile(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	e2e.PutEtcd(t, cli, "/skydns/cluster/openmcp/eu1/shop/5d1c0e2a", `{"host":"203.0.113.10","ttl":60,"owner":"eu1"}`)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("shop")
	serviceIP := createService(t, k8s, "shop", "web")

	central := e2e.RunCentral(t, etcd.ClientURL)
	cluster := e2e.RunCorefile(t, "cluster-dns.Corefile", "GATEWAYDNS_KUBECONFIG="+kube.KubeconfigFile)
	upstream := corednsproc.Start(t, "upstream.Corefile", upstreamCorefile)
	cluster.WaitReady(t, 60*time.Second)
	upstream.WaitReady(t, 30*time.Second)
	node := e2e.RunCorefile(t, "nodelocal.Corefile",
		"NODELOCAL_CENTRAL="+central.DNS,
		"NODELOCAL_CLUSTER_DNS="+cluster.DNS,
		"NODELOCAL_UPSTREAM="+upstream.DNS)
	node.WaitReady(t, 30*time.Second)

	reverse, err := dns.ReverseAddr(serviceIP)
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]*corednsproc.Process{"central": central, "cluster DNS": cluster, "upstream": upstream}
	firstAsked := map[string]time.Time{} // the node cache took its answer after this
	for _, c := range []struct {
		name   string
		qtype  uint16
		server string
		want   func(*dns.Msg) bool
	}{
		{"shop.eu1.openmcp.cluster.", dns.TypeA, "central", e2e.AnswersWith("203.0.113.10")},
		{"nothere.eu1.openmcp.cluster.", dns.TypeA, "central", e2e.IsNXDOMAIN}, // denial cached too
		{"web.shop.svc.cluster.local.", dns.TypeA, "cluster DNS", e2e.AnswersWith(serviceIP)},
		{reverse, dns.TypePTR, "cluster DNS", func(r *dns.Msg) bool {
			return len(r.Answer) == 1 && r.Answer[0].(*dns.PTR).Ptr == "web.shop.svc.cluster.local."
		}},
		{"example.org.", dns.TypeA, "upstream", e2e.AnswersWith("198.51.100.3")},
	} {
		before := map[string]float64{}
		for name, s := range servers {
			before[name] = questionsOf(t, s, c.qtype)
		}
		firstAsked[c.name] = time.Now()
		for _, netw := range []string{"udp", "tcp", "udp"} {
			if r := e2e.Ask(t, netw, node.DNS, c.name, c.qtype); !c.want(r) {
				t.Errorf("%s: %s %s through the node cache: %v", netw, dns.TypeToString[c.qtype], c.name, r)
			}
		}
		for name, s := range servers {
			want := 0.0
			if name == c.server {
				want = 1 // the two others came from the node cache
			}
			if got := questionsOf(t, s, c.qtype) - before[name]; got != want {
				t.Errorf("%s %s: the %s was asked %v times, want %v", dns.TypeToString[c.qtype], c.name, name, got, want)
			}
		}
	}

	// A change: the central server answers it at once; the node cache keeps the answer it took
	// for its 5s, then asks again.
	const shop = "shop.eu1.openmcp.cluster."
	e2e.PutEtcd(t, cli, "/skydns/cluster/openmcp/eu1/shop/5d1c0e2a", `{"host":"203.0.113.11","ttl":60,"owner":"eu1"}`)
	e2e.WaitFor(t, 5*time.Second, central.DNS, shop, dns.TypeA, e2e.AnswersWith("203.0.113.11"))
	r := e2e.Ask(t, "udp", node.DNS, shop, dns.TypeA)
	if since := time.Since(firstAsked[shop]); since < 4*time.Second && !e2e.AnswersWith("203.0.113.10")(r) {
		t.Errorf("%v after the node cache took its answer it answers %v, want the cached 203.0.113.10", since, r)
	}
	e2e.WaitFor(t, 10*time.Second, node.DNS, shop, dns.TypeA, e2e.AnswersWith("203.0.113.11"))
	since := time.Since(firstAsked[shop])
	if since < 5*time.Second {
		t.Errorf("the node cache answered the change %v after it took the old answer: it did not keep it for its 5s", since)
	}
	t.Logf("the change reached the pods %v after the node cache took the old answer", since.Round(time.Millisecond))
}
