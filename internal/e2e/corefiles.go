package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// ReadCorefile is corefile.d/NAME, an example the repository ships.
func ReadCorefile(t testing.TB, name string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "corefile.d", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// RunCorefile starts the binary with corefile.d/NAME, its DNS port and the health, ready and
// metrics listeners moved to free loopback ports, and env added to its environment. It does
// not wait for readiness.
func RunCorefile(t testing.TB, name string, env ...string) *corednsproc.Process {
	t.Helper()
	return corednsproc.Start(t, name, ReadCorefile(t, name), env...)
}

// RunCentral starts the central server (corefile.d/central.Corefile) on etcdURL and waits
// until it is ready.
func RunCentral(t testing.TB, etcdURL string) *corednsproc.Process {
	t.Helper()
	c := RunCorefile(t, "central.Corefile", "GATEWAYDNS_ETCD_ENDPOINTS="+etcdURL)
	c.WaitReady(t, 30*time.Second)
	return c
}

// WriterCorefile is a workload cluster's publish-only stanza for the zone openmcp.cluster, with
// the extra option lines given (policy, conflict, lease, credentials, namespaces...).
func WriterCorefile(etcdURL, owner, kubeconfig, domainFilter string, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "openmcp.cluster {\n    errors\n    ready\n    prometheus :9153\n    gatewaydns {\n")
	fmt.Fprintf(&b, "        endpoint %s\n        owner %s\n        kubeconfig %s\n        domain-filter %s\n        publish-only\n",
		etcdURL, owner, kubeconfig, domainFilter)
	for _, l := range extra {
		fmt.Fprintf(&b, "        %s\n", l)
	}
	b.WriteString("    }\n}\n")
	return b.String()
}

// RunWriter starts a publish-only writer (WriterCorefile). It does not wait for readiness: a
// writer is ready once it has published, which some tests keep from happening.
func RunWriter(t testing.TB, name, etcdURL, owner, kubeconfig, domainFilter string, extra ...string) *corednsproc.Process {
	t.Helper()
	return corednsproc.Start(t, name+".Corefile", WriterCorefile(etcdURL, owner, kubeconfig, domainFilter, extra...))
}

// BothRoles is a stanza that serves openmcp.cluster from etcdURL and publishes the cluster's
// names as owner, with the ready and metrics listeners the tests read.
func BothRoles(etcdURL, owner, kubeconfig string, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "openmcp.cluster {\n    ready\n    prometheus :9153\n    gatewaydns {\n")
	fmt.Fprintf(&b, "        endpoint %s\n        owner %s\n        kubeconfig %s\n        domain-filter eu1.openmcp.cluster\n",
		etcdURL, owner, kubeconfig)
	for _, l := range extra {
		fmt.Fprintf(&b, "        %s\n", l)
	}
	b.WriteString("    }\n}\n")
	return b.String()
}

// ReloadingCorefile is the Corefile of round n of a server StartReloading started: the comment
// and min-lease-ttl change every round, so its hash does. Each instance serves transfers and
// sends a NOTIFY at its start (to itself: answered at once), so that the notifier of every
// instance is started and stopped too.
func ReloadingCorefile(p *corednsproc.Process, endpoint string, n int) string {
	return fmt.Sprintf(`# reload round %d
zone.test:%s {
    reload 2s 0s
    ready
    prometheus
    pprof
    gatewaydns {
        endpoint %s
        min-lease-ttl %ds
        notify %s
    }
    transfer {
        to %s
    }
}
`, n, strings.TrimPrefix(p.DNS, "127.0.0.1:"), endpoint, 30+n, p.DNS, p.DNS)
}

// StartReloading starts the binary serving zone.test from endpoint with round 0 of
// ReloadingCorefile: a Corefile that ReloadTo rewrites to make the reload plugin restart the
// server.
func StartReloading(t testing.TB, endpoint string) *corednsproc.Process {
	t.Helper()
	p := corednsproc.Prepare(t, "reloading.Corefile")
	p.Start(t, ReloadingCorefile(p, endpoint, 0))
	return p
}

// ReloadTo writes round n's Corefile and waits until the log reports one more completed reload.
func ReloadTo(t testing.TB, p *corednsproc.Process, endpoint string, n int) time.Duration {
	t.Helper()
	before := strings.Count(p.Output(), "Reloading complete")
	start := time.Now()
	if err := os.WriteFile(p.Conf, []byte(p.Localize(ReloadingCorefile(p, endpoint, n))), 0o644); err != nil {
		t.Fatal(err)
	}
	for time.Since(start) < 20*time.Second {
		if !p.Running() {
			t.Fatalf("coredns exited during reload %d: %v", n, p.Child.Err())
		}
		if strings.Count(p.Output(), "Reloading complete") > before {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("reload %d not complete within 20s", n)
	return 0
}
