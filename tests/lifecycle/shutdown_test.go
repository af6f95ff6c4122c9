package lifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	corednstest "github.com/coredns/coredns/test"
	"github.com/miekg/dns"
	"go.uber.org/goleak"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// TestShutdownLeavesNothingRunning starts and stops a server with two gatewaydns stanzas, as a
// CoreDNS reload does with the old instance: every goroutine they started must be gone.
func TestShutdownLeavesNothingRunning(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	if _, err := cli.Put(context.Background(), "/skydns/test/a/1", `{"host":"10.0.0.1"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(context.Background(), "/skydns/test/b/1", `{"host":"10.0.0.2"}`); err != nil {
		t.Fatal(err)
	}
	baseline := goleak.IgnoreCurrent()

	for round := range 3 {
		port := corednsproc.FreePort(t)
		corefile := fmt.Sprintf("a.test:%[1]d {\n gatewaydns {\n  endpoint %[2]s\n }\n}\nb.test:%[1]d {\n gatewaydns {\n  endpoint %[2]s\n }\n}\n", port, etcd.ClientURL)
		inst, err := corednstest.CoreDNSServer(corefile)
		if err != nil {
			t.Fatal(err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		e2e.WaitFor(t, 10*time.Second, addr, "a.test.", dns.TypeA, e2e.HasAnswer)
		e2e.WaitFor(t, 10*time.Second, addr, "b.test.", dns.TypeA, e2e.HasAnswer)
		inst.Stop()
		for _, err := range inst.ShutdownCallbacks() {
			t.Fatalf("round %d: shutdown: %v", round, err)
		}
		if err := goleak.Find(baseline); err != nil {
			t.Fatalf("round %d: goroutines left after shutdown:\n%v", round, err)
		}
	}
}
