package transfer

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// catalogCorefile serves zones and the catalog catalog.invalid listing them, to the secondary.
func catalogCorefile(zones, etcdURL, secondary string) string {
	return fmt.Sprintf(`%s catalog.invalid {
    health
    ready
    transfer {
        to %s
    }
    gatewaydns {
        endpoint %s
        catalog catalog.invalid
    }
}`, zones, secondary, etcdURL)
}

// TestKnotProvisionsAndDropsZonesFromTheCatalog runs Knot reading the primary's catalog zone
// (RFC 9432) with no zone of its own: it provisions the two zones of the server block, transfers
// and answers both, and drops the second once a reload of the primary leaves it out of the
// Corefile (the new catalog's NOTIFY).
func TestKnotProvisionsAndDropsZonesFromTheCatalog(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	e2e.PutInTxns(t, etcd.Client(t), []clientv3.Op{
		clientv3.OpPut("/skydns/cluster/openmcp/app/3e6bee2e", `{"host":"10.0.0.1"}`),
		clientv3.OpPut("/skydns/test/second/app/3e6bee2e", `{"host":"10.0.0.2"}`),
	})
	knot := e2e.NewSecondary(t, "knot", "", nil)
	knot.Catalog = "catalog.invalid"
	primary := corednsproc.Start(t, "Corefile", catalogCorefile("openmcp.cluster second.test", etcd.ClientURL, knot.DNS))
	primary.WaitReady(t, 30*time.Second)
	knot.Primary = primary.DNS
	knot.Start(t)
	started := time.Now()
	for _, name := range []string{"app.openmcp.cluster.", "app.second.test."} {
		e2e.WaitFor(t, 10*time.Second, knot.DNS, name, dns.TypeA, e2e.HasAnswer)
	}
	t.Logf("Knot answers both zones of the catalog %s after its start", time.Since(started).Round(time.Millisecond))

	if _, ok := primary.ReloadNow(t, catalogCorefile("openmcp.cluster", etcd.ClientURL, knot.DNS), 10*time.Second); !ok {
		t.Fatal("the reload without second.test failed")
	}
	reloaded := time.Now()
	e2e.WaitFor(t, 10*time.Second, knot.DNS, "app.second.test.", dns.TypeA, func(r *dns.Msg) bool { return r.Rcode == dns.RcodeRefused })
	t.Logf("Knot dropped second.test %s after the reload left it out", time.Since(reloaded).Round(time.Millisecond))
	if r := e2e.Ask(t, "udp", knot.DNS, "app.openmcp.cluster.", dns.TypeA); !e2e.HasAnswer(r) {
		t.Errorf("Knot stopped answering openmcp.cluster, which the catalog still lists: %v", r)
	}
}
