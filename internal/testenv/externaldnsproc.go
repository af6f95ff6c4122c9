package testenv

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/child"
	"github.com/gatewaydns/gatewaydns/internal/freeport"
	"github.com/gatewaydns/gatewaydns/internal/promtext"
)

// ExternalDNSOptions configures StartExternalDNS: an external-dns v0.21.0 with
// --provider=coredns, as a workload cluster ran it before gatewaydns.
type ExternalDNSOptions struct {
	// EtcdURL is the etcd it writes into (its ETCD_URLS); plain http only.
	EtcdURL string
	// Kubeconfig is the file of the cluster it reads (--kubeconfig).
	Kubeconfig string
	// DomainFilter is --domain-filter, e.g. "eu1.openmcp.cluster". Required.
	DomainFilter string
	// OwnerID is --txt-owner-id. Required.
	OwnerID string
	// Sources are the --source flags; default gateway-httproute.
	Sources []string
	// StrictlyOwned adds --coredns-strictly-owned: an "owner" field in every key, and only
	// keys with its owner are read.
	StrictlyOwned bool
	// Interval is --interval, the time between two full syncs; default 1s (its loop ticks
	// once a second, so less changes nothing).
	Interval time.Duration
	// Args are more flags, after the ones above.
	Args []string
}

// ExternalDNS is an external-dns process started by StartExternalDNS.
type ExternalDNS struct {
	// Bin is the binary, Args its flags (ETCD_URLS is in its environment).
	Bin  string
	Args []string
	// MetricsAddr is host:port of its /healthz and /metrics (--metrics-address).
	MetricsAddr string
	// LogFile receives its output.
	LogFile string

	t    testing.TB
	proc *child.Process
	stop sync.Once
}

// ExternalDNSBinary returns the external-dns binary (see ToolBinary). Call it first in a test
// that needs external-dns, so that a skip comes before anything else is started.
func ExternalDNSBinary(t testing.TB) string {
	t.Helper()
	return ToolBinary(t, "external-dns", "hack/build-external-dns.sh")
}

// StartExternalDNS starts external-dns (see ExternalDNSBinary) with o, and waits until its
// /healthz answers (it serves that before its first sync: wait for what it publishes to know
// it synced, or use WaitSyncs). It is stopped by t.Cleanup; when the test failed, the tail of
// its log is printed.
func StartExternalDNS(t testing.TB, o ExternalDNSOptions) *ExternalDNS {
	t.Helper()
	bin := ExternalDNSBinary(t)
	if o.EtcdURL == "" || o.Kubeconfig == "" || o.DomainFilter == "" || o.OwnerID == "" {
		t.Fatalf("testenv: StartExternalDNS needs EtcdURL, Kubeconfig, DomainFilter and OwnerID: %+v", o)
	}
	if len(o.Sources) == 0 {
		o.Sources = []string{"gateway-httproute"}
	}
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	ports, err := freeport.Take(1)
	if err != nil {
		t.Fatalf("testenv: finding a free port: %v", err)
	}
	x := &ExternalDNS{
		Bin:         bin,
		MetricsAddr: fmt.Sprintf("127.0.0.1:%d", ports[0]),
		LogFile:     filepath.Join(t.TempDir(), "external-dns.log"),
		t:           t,
	}
	x.Args = []string{"--provider=coredns"}
	for _, s := range o.Sources {
		x.Args = append(x.Args, "--source="+s)
	}
	x.Args = append(x.Args,
		"--kubeconfig="+o.Kubeconfig,
		"--domain-filter="+o.DomainFilter,
		"--txt-owner-id="+o.OwnerID,
		"--interval="+o.Interval.String(),
		// --events syncs on a change of a watched object, at most this often.
		"--events", "--min-event-sync-interval=100ms",
		"--metrics-address="+x.MetricsAddr,
	)
	if o.StrictlyOwned {
		x.Args = append(x.Args, "--coredns-strictly-owned")
	}
	x.Args = append(x.Args, o.Args...)

	cmd := exec.Command(bin, x.Args...)
	cmd.Env = append(os.Environ(), "ETCD_URLS="+o.EtcdURL)
	logOnFailure(t, "external-dns", x.LogFile)
	p, err := child.Start("external-dns", x.LogFile, cmd)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	x.proc = p
	t.Cleanup(x.Stop)
	if err := x.waitHealthy(30 * time.Second); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return x
}

func (x *ExternalDNS) waitHealthy(timeout time.Duration) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	url := "http://" + x.MetricsAddr + "/healthz"
	last := errors.New("no answer yet")
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		select {
		case <-x.proc.Exited():
			return fmt.Errorf("external-dns exited before %s answered (%v); log %s:\n%s", url, x.proc.Err(), x.LogFile, LogTail(x.LogFile, 30))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("external-dns: %s did not answer 200 within %s: %v", url, timeout, last)
		}
		resp, err := hc.Get(url)
		if err != nil {
			last = err
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = errors.New(resp.Status)
	}
}

// Stop stops external-dns with SIGTERM and waits until it exited (SIGKILL after 10s): once
// Stop returns it writes nothing more. It may exit with an error when the signal came in the
// middle of a sync (external-dns treats the cancelled sync as fatal); that is not reported.
// Stopping a stopped process does nothing.
func (x *ExternalDNS) Stop() {
	x.stop.Do(func() { x.proc.Stop(syscall.SIGTERM, 10*time.Second) })
}

// StopAfterSync waits for the end of a sync loop and stops external-dns right after it, long
// before the next one (a second at least): SIGTERM in the middle of a loop cancels its
// remaining etcd requests and can leave a name half-written (a key deleted, its replacement
// not put yet). For a test's setup (a history to migrate from), not for the switch itself,
// whose stop lands where it lands (StopMidSync). It returns the loops it waited for.
func (x *ExternalDNS) StopAfterSync(t testing.TB, timeout time.Duration) SyncStats {
	t.Helper()
	st := x.WaitSyncs(t, 1, timeout)
	x.Stop()
	return st
}

// StopMidSync stops external-dns with SIGTERM inside a sync loop, as `kubectl scale
// --replicas=0` may: it waits for the next loop to start, waits a random part of within, and
// signals. It returns whether the loop was cut: external-dns then cancels the loop's remaining
// etcd requests and exits with "Failed to do run once" (its controller treats the cancelled
// loop as fatal), where a stop between two loops logs "Terminating main controller loop". A
// loop that writes nothing lasts one etcd read: to cut it, the caller makes external-dns's link
// to etcd slow (tcpproxy.SetDelay) and within shorter than a round trip.
func (x *ExternalDNS) StopMidSync(t testing.TB, within, timeout time.Duration) (cut bool) {
	t.Helper()
	started, _ := x.Metric(externalDNSLastReconcile)
	for deadline := time.Now().Add(timeout); ; time.Sleep(5 * time.Millisecond) {
		if !x.Running() {
			t.Fatalf("external-dns exited (%v) while waiting for a sync loop; log:\n%s", x.proc.Err(), LogTail(x.LogFile, 30))
		}
		if time.Now().After(deadline) {
			t.Fatalf("external-dns started no sync loop within %s; log:\n%s", timeout, LogTail(x.LogFile, 30))
		}
		if v, ok := x.Metric(externalDNSLastReconcile); ok && v != started {
			break
		}
	}
	if within > 0 {
		time.Sleep(rand.N(within))
	}
	x.Stop()
	return strings.Contains(x.Log(), "Failed to do run once")
}

// Running reports whether the process has not exited.
func (x *ExternalDNS) Running() bool { return x.proc.Running() }

// Log returns its output so far.
func (x *ExternalDNS) Log() string {
	data, err := os.ReadFile(x.LogFile)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", x.LogFile, err)
	}
	return string(data)
}

// Metric returns the value of one series of its /metrics, e.g.
// "external_dns_controller_no_op_runs_total"; ok is false when it is not exported (yet).
func (x *ExternalDNS) Metric(series string) (v float64, ok bool) {
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	body, err := promtext.Scrape(hc, "http://"+x.MetricsAddr+"/metrics")
	if err != nil {
		return 0, false
	}
	return promtext.Value(body, series)
}

// Sync loops: external_dns_controller_last_reconcile_timestamp_seconds is set at the start of
// every loop, external_dns_controller_last_sync_timestamp_seconds at the end of every loop that
// succeeded, and external_dns_controller_no_op_runs_total counts the loops that found nothing
// to change.
const (
	externalDNSLastReconcile = "external_dns_controller_last_reconcile_timestamp_seconds"
	externalDNSLastSync      = "external_dns_controller_last_sync_timestamp_seconds"
	externalDNSNoOpRuns      = "external_dns_controller_no_op_runs_total"
)

// SyncStats is what WaitSyncs saw.
type SyncStats struct {
	Syncs   int // successful sync loops that ended while it waited
	Changes int // how many of them changed something in etcd (not a no-op)
}

// WaitSyncs waits until external-dns has completed n more successful sync loops (each ends with
// a new last-sync timestamp) and returns how many of them changed something. It fails the test
// when external-dns exits or the loops do not come within timeout.
func (x *ExternalDNS) WaitSyncs(t testing.TB, n int, timeout time.Duration) SyncStats {
	t.Helper()
	lastSync, _ := x.Metric(externalDNSLastSync)
	noOps, _ := x.Metric(externalDNSNoOpRuns)
	var st SyncStats
	for deadline := time.Now().Add(timeout); st.Syncs < n; time.Sleep(50 * time.Millisecond) {
		if !x.Running() {
			t.Fatalf("external-dns exited (%v) while waiting for %d sync loops; log:\n%s", x.proc.Err(), n, LogTail(x.LogFile, 30))
		}
		if time.Now().After(deadline) {
			t.Fatalf("external-dns completed %d of %d sync loops within %s; log:\n%s", st.Syncs, n, timeout, LogTail(x.LogFile, 30))
		}
		ls, ok := x.Metric(externalDNSLastSync)
		if !ok || ls == lastSync {
			continue
		}
		// Polled every 50ms, loops at least a second apart: each new timestamp is one loop.
		lastSync = ls
		st.Syncs++
		if no, _ := x.Metric(externalDNSNoOpRuns); no > noOps {
			noOps = no
		} else {
			st.Changes++
		}
	}
	return st
}
