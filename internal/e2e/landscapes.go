package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/tcpproxy"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// ServeZone starts a CoreDNS in this process that serves zone.test from endpoint with
// gatewaydns and returns its address once it answers.
func ServeZone(t testing.TB, endpoint string, cli *clientv3.Client) string {
	t.Helper()
	if _, err := cli.Put(context.Background(), "/skydns/test/zone/ready/1", `{"host":"10.255.0.1"}`); err != nil {
		t.Fatal(err)
	}
	port := corednsproc.FreePort(t)
	StartCoreDNS(t, fmt.Sprintf("zone.test:%d {\n    gatewaydns {\n        endpoint %s\n    }\n}\n", port, endpoint))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	WaitFor(t, 10*time.Second, addr, "ready.zone.test.", dns.TypeA, HasAnswer)
	return addr
}

// Proxied returns a proxy to target that the test closes at its end.
func Proxied(t testing.TB, target string) *tcpproxy.Proxy {
	t.Helper()
	p, err := tcpproxy.Start(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// OutageLandscape starts an etcd that holds hand.by.openmcp.cluster (198.51.100.7), a proxy to
// it that a test cuts or black-holes, and a kube-apiserver; it returns a direct client of the
// etcd, the API server, the proxy and the etcd URL through the proxy.
func OutageLandscape(t testing.TB) (*clientv3.Client, *testenv.Kube, *tcpproxy.Proxy, string) {
	t.Helper()
	etcd := testenv.StartEtcd(t)
	kube := testenv.StartKubeAPIServer(t)
	cli := etcd.Client(t)
	if _, err := cli.Put(context.Background(), "/skydns/cluster/openmcp/by/hand/1", `{"host":"198.51.100.7"}`); err != nil {
		t.Fatal(err)
	}
	etcdP := Proxied(t, strings.TrimPrefix(etcd.ClientURL, "http://"))
	return cli, kube, etcdP, "http://" + etcdP.Addr
}
