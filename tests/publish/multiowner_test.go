package publish

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// TestCNAMEOfOneClusterAndAddressOfAnotherNeverShareAName: eu1 publishes a name as a CNAME to
// its load balancer's host name; us1 then publishes the same name with an address, in the
// default shared mode. A CNAME cannot share its name, so the older claim keeps it: us1 writes
// nothing, gets one Conflict Event on each of its routes (not one per reconcile), and the central server
// answers the CNAME alone. When eu1's route goes, us1 takes the free name by itself.
func TestCNAMEOfOneClusterAndAddressOfAnotherNeverShareAName(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	k8s := gatewayfixture.New(t, kube.Config)
	const host = "app.global.openmcp.cluster"
	const name = host + "."
	k8s.Namespace("eu1")
	k8s.Gateway("eu1", "gw", gatewayv1.HTTPProtocolType, 80, "", "lb.eu1.example.net")
	k8s.HTTPRoute("eu1", "app", "eu1", "gw", host)
	k8s.Namespace("us1")
	k8s.Gateway("us1", "gw", gatewayv1.HTTPProtocolType, 80, "", "203.0.113.72")
	k8s.HTTPRoute("us1", "app", "us1", "gw", host)

	central := e2e.RunCentral(t, etcd.ClientURL)
	eu1 := e2e.RunWriter(t, "eu1", etcd.ClientURL, "eu1", kube.KubeconfigFile, "global.openmcp.cluster", "namespaces eu1")
	eu1.WaitReady(t, 60*time.Second)
	isCNAME := func(r *dns.Msg) bool {
		return r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1 && r.Answer[0].Header().Rrtype == dns.TypeCNAME &&
			r.Answer[0].(*dns.CNAME).Target == "lb.eu1.example.net."
	}
	e2e.WaitFor(t, 15*time.Second, central.DNS, name, dns.TypeCNAME, isCNAME)

	us1 := e2e.RunWriter(t, "us1", etcd.ClientURL, "us1", kube.KubeconfigFile, "global.openmcp.cluster", "namespaces us1")
	us1.WaitReady(t, 60*time.Second)
	ev := k8s.WaitWarningEvents("us1", "HTTPRoute", "app", "Conflict", 15*time.Second)[0]
	if !strings.Contains(ev.Message, "CNAME") || !strings.Contains(ev.Message, "eu1") {
		t.Errorf("the Conflict Event does not say what holds the name: %q", ev.Message)
	}
	if owners := ownersOf(t, etcd.Client(t), host); !slices.Equal(owners, []string{"eu1"}) {
		t.Fatalf("owners of %s in etcd: %v, want eu1 alone", host, owners)
	}
	for _, q := range []uint16{dns.TypeA, dns.TypeCNAME} {
		r, err := e2e.Exchange("udp", central.DNS, name, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok && a.A.String() == "203.0.113.72" {
				t.Fatalf("%s answered us1's address beside eu1's CNAME:\n%v", dns.TypeToString[q], r)
			}
		}
	}

	// Reported once: reconciling the lost name again does not repeat it. A second route on the
	// name and on another one makes us1 reconcile both; the other name answering shows that
	// it did.
	k8s.HTTPRoute("us1", "app2", "us1", "gw", host, "other.global.openmcp.cluster")
	e2e.WaitFor(t, 15*time.Second, central.DNS, "other.global.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.72"))
	// The route that joined the lost name is told, once; the first one is not told again.
	k8s.WaitWarningEvents("us1", "HTTPRoute", "app2", "Conflict", 10*time.Second)
	for _, route := range []string{"app", "app2"} {
		if evs := k8s.WarningEvents("us1", "HTTPRoute", route, "Conflict"); len(evs) != 1 || evs[0].Count > 1 {
			t.Errorf("Conflict Events on us1's route %s: %d (count %d), want one, reported once", route, len(evs), evs[0].Count)
		}
	}

	// eu1 withdraws: us1, which watches the name it lost, takes it at once.
	withdrawn := time.Now()
	k8s.DeleteHTTPRoute("eu1", "app")
	took, ok, last := e2e.TimeToAnswer(central.DNS, name, withdrawn, 10*time.Second, "203.0.113.72")
	if !ok {
		t.Fatalf("us1 did not take the freed name within 10s; last answer: %s", last)
	}
	t.Logf("us1 answered the name %s after eu1's route went", took.Round(time.Millisecond))
	if owners := ownersOf(t, etcd.Client(t), host); !slices.Equal(owners, []string{"us1"}) {
		t.Fatalf("owners of %s in etcd after the takeover: %v, want us1 alone", host, owners)
	}
}

// ownersOf is the sorted owners of the keys one level below name.
func ownersOf(t *testing.T, cli *clientv3.Client, name string) []string {
	t.Helper()
	base := record.NamePath(record.DefaultPrefix, name) + "/"
	resp, err := cli.Get(t.Context(), base, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var owners []string
	for _, kv := range resp.Kvs {
		if o := record.OwnerOf(kv.Value); !strings.Contains(string(kv.Key)[len(base):], "/") && !slices.Contains(owners, o) {
			owners = append(owners, o)
		}
	}
	slices.Sort(owners)
	return owners
}
