package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/gatewaydns/gatewaydns/internal/child"
	"github.com/gatewaydns/gatewaydns/internal/freeport"
)

// EtcdCluster is an n-member etcd cluster on loopback started by StartEtcdCluster: one
// bin/etcd process per member, each with its own ports and data directory, for failover
// tests (a member stopped, crashed, or frozen as a hung host is).
type EtcdCluster struct {
	Members []*EtcdMember
	t       testing.TB
	named   int      // members ever made, for the next one's name (AddMember)
	args    []string // every member's flags besides the cluster's own (WithEtcdArgs)
}

// clusterToken is every cluster's --initial-cluster-token (and a restore's).
const clusterToken = "testenv-cluster"

// EtcdMember is one member of an EtcdCluster. Its ports and data directory stay the same
// across Stop/Restart.
type EtcdMember struct {
	Name      string
	ClientURL string // http://127.0.0.1:PORT
	PeerURL   string
	DataDir   string
	LogFile   string
	// ID is the member's ID as etcd reports it in response headers (MemberId), known once
	// the cluster started.
	ID uint64

	c *EtcdCluster

	// existing: the member joins a running cluster (AddMember), not one started with it.
	existing bool

	opMu   sync.Mutex // serializes start, stop, freeze and thaw
	mu     sync.Mutex // guards the fields below
	proc   *child.Process
	frozen bool
}

// StartEtcdCluster starts an n-member etcd cluster (bin/etcd, see FindBinary) on free
// 127.0.0.1 ports, with data under t.TempDir(), and waits until every member reports
// healthy. Members are thawed and stopped by t.Cleanup; when the test failed, the tail of
// each member's log is printed. Of opts, WithEtcdArgs adds flags to every member's.
func StartEtcdCluster(t testing.TB, n int, opts ...EtcdOption) *EtcdCluster {
	t.Helper()
	var o etcdOptions
	for _, opt := range opts {
		opt(&o)
	}
	if n < 1 {
		t.Fatalf("testenv: StartEtcdCluster(%d): need at least one member", n)
	}
	bin := FindBinary(t, "etcd")
	dir := t.TempDir()
	c := &EtcdCluster{t: t, named: n, args: o.args}
	for i := range n {
		name := fmt.Sprintf("m%d", i)
		m := &EtcdMember{
			Name:    name,
			DataDir: filepath.Join(dir, name, "data"),
			LogFile: filepath.Join(dir, name+".log"),
			c:       c,
		}
		c.Members = append(c.Members, m)
		logOnFailure(t, "etcd member "+name, m.LogFile)
	}
	t.Cleanup(func() {
		for _, m := range c.Members {
			m.stop(syscall.SIGTERM)
		}
	})

	// A free port can be taken by someone else between our probe and etcd's bind: pick new
	// ports and start afresh in that case.
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		if err = c.startAll(bin); err == nil {
			break
		}
		inUse := false
		for _, m := range c.Members {
			m.stop(syscall.SIGKILL)
			inUse = inUse || strings.Contains(LogTail(m.LogFile, 20), "address already in use")
			os.RemoveAll(m.DataDir)
		}
		if !inUse {
			break
		}
	}
	if err != nil {
		t.Fatalf("testenv: starting a %d-member etcd cluster: %v", n, err)
	}
	if err := c.learnIDs(); err != nil {
		t.Fatalf("testenv: etcd cluster: %v", err)
	}
	return c
}

// startAll picks ports for every member, starts them all at once (a member waits for a
// quorum of its peers before it is healthy) and waits until each is healthy.
func (c *EtcdCluster) startAll(bin string) error {
	ports, err := freeport.Take(2 * len(c.Members))
	if err != nil {
		return fmt.Errorf("finding free ports: %w", err)
	}
	var initial []string
	for i, m := range c.Members {
		m.ClientURL = fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])
		m.PeerURL = fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	cluster := strings.Join(initial, ",")
	for _, m := range c.Members {
		if err := m.launch(bin, cluster); err != nil {
			return err
		}
	}
	for _, m := range c.Members {
		if err := m.waitHealthy(30 * time.Second); err != nil {
			return err
		}
	}
	return nil
}

// learnIDs asks each member for its ID.
func (c *EtcdCluster) learnIDs() error {
	for _, m := range c.Members {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err := m.Status(ctx)
		cancel()
		if err != nil {
			return fmt.Errorf("status of member %s: %w", m.Name, err)
		}
		m.ID = st.Header.MemberId
	}
	return nil
}

func (m *EtcdMember) args(cluster string) []string {
	state := "new" // ignored once the data directory holds a member
	if m.existing {
		state = "existing"
	}
	return append([]string{
		"--name=" + m.Name,
		"--data-dir=" + m.DataDir,
		"--listen-client-urls=" + m.ClientURL,
		"--advertise-client-urls=" + m.ClientURL,
		"--listen-peer-urls=" + m.PeerURL,
		"--initial-advertise-peer-urls=" + m.PeerURL,
		"--initial-cluster=" + cluster,
		"--initial-cluster-state=" + state,
		"--initial-cluster-token=" + clusterToken,
		"--heartbeat-interval=50",
		"--election-timeout=500",
		"--unsafe-no-fsync=true",
		"--log-level=info",
	}, m.c.args...)
}

// launch starts the member's process without waiting for it.
func (m *EtcdMember) launch(bin, cluster string) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	if m.Running() {
		return fmt.Errorf("member %s is already running", m.Name)
	}
	if err := os.MkdirAll(filepath.Dir(m.DataDir), 0o755); err != nil {
		return err
	}
	p, err := child.Start("etcd "+m.Name, m.LogFile, exec.Command(bin, m.args(cluster)...))
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.proc, m.frozen = p, false
	m.mu.Unlock()
	return nil
}

func (m *EtcdMember) waitHealthy(timeout time.Duration) error {
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	if p == nil {
		return fmt.Errorf("member %s is not running", m.Name)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	last := errors.New("no answer yet")
	for {
		select {
		case <-p.Exited():
			return fmt.Errorf("member %s exited before becoming healthy (%v); log %s:\n%s", m.Name, p.Err(), m.LogFile, LogTail(m.LogFile, 30))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("member %s at %s not healthy after %v: %v", m.Name, m.ClientURL, timeout, last)
		}
		if err := checkHealth(hc, m.ClientURL+"/health"); err == nil {
			return nil
		} else {
			last = err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop thaws the member if it is frozen (a stopped process does not act on SIGTERM), then
// signals it and waits for it to exit (SIGKILL after 15s).
func (m *EtcdMember) stop(sig syscall.Signal) {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	if p == nil {
		return
	}
	if p.Running() {
		_ = p.Cmd.Process.Signal(syscall.SIGCONT)
	}
	p.Stop(sig, 15*time.Second)
	m.mu.Lock()
	m.proc, m.frozen = nil, false
	m.mu.Unlock()
}

// Stop stops the member gracefully (SIGTERM) and waits for it to exit, keeping its data for
// Restart. Stopping a stopped member does nothing.
func (m *EtcdMember) Stop() { m.stop(syscall.SIGTERM) }

// Kill stops the member abruptly (SIGKILL), as in a crash.
func (m *EtcdMember) Kill() { m.stop(syscall.SIGKILL) }

// Restart stops the member if it runs and starts it again with the same data directory and
// ports, waiting until it is healthy. It fails the test on error: call it from the test's
// goroutine.
func (m *EtcdMember) Restart() {
	m.c.t.Helper()
	m.Stop()
	bin := FindBinary(m.c.t, "etcd")
	if err := m.launch(bin, m.c.initialCluster()); err != nil {
		m.c.t.Fatalf("testenv: restarting etcd member %s: %v", m.Name, err)
	}
	if err := m.waitHealthy(30 * time.Second); err != nil {
		m.c.t.Fatalf("testenv: restarting etcd member %s: %v", m.Name, err)
	}
}

// Freeze stops the member's process with SIGSTOP, as a hung host: its sockets stay open and
// accept connections, but nothing answers. Thaw resumes it; t.Cleanup thaws it at the end
// in any case. It fails the test when the member does not run.
func (m *EtcdMember) Freeze() {
	m.c.t.Helper()
	if err := m.signal(syscall.SIGSTOP, true); err != nil {
		m.c.t.Fatalf("testenv: freezing etcd member %s: %v", m.Name, err)
	}
	// The signal is delivered asynchronously: on a busy machine the member can still answer
	// for a few milliseconds, which would let a test's write slip through before the freeze.
	if err := m.waitStopped(2 * time.Second); err != nil {
		m.c.t.Fatalf("testenv: freezing etcd member %s: %v", m.Name, err)
	}
}

// waitStopped polls /proc/PID/stat until the process's state is "T" (stopped by a signal).
// Where there is no /proc it returns at once.
func (m *EtcdMember) waitStopped(timeout time.Duration) error {
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	if p == nil {
		return errors.New("not running")
	}
	stat := fmt.Sprintf("/proc/%d/stat", p.Cmd.Process.Pid)
	deadline := time.Now().Add(timeout)
	for {
		data, err := os.ReadFile(stat)
		if err != nil {
			return nil // no /proc: nothing to check
		}
		// The state follows the command name in parentheses, which may hold spaces.
		if i := strings.LastIndexByte(string(data), ')'); i >= 0 && i+2 < len(data) && data[i+2] == 'T' {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d not stopped within %v after SIGSTOP: %s", p.Cmd.Process.Pid, timeout, data)
		}
		time.Sleep(time.Millisecond)
	}
}

// Thaw resumes a member frozen by Freeze (SIGCONT). Thawing a member that is not frozen does
// nothing.
func (m *EtcdMember) Thaw() {
	m.c.t.Helper()
	if err := m.signal(syscall.SIGCONT, false); err != nil {
		m.c.t.Fatalf("testenv: thawing etcd member %s: %v", m.Name, err)
	}
}

func (m *EtcdMember) signal(sig syscall.Signal, frozen bool) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil || !m.proc.Running() {
		if !frozen {
			return nil
		}
		return errors.New("not running")
	}
	if m.frozen == frozen {
		return nil
	}
	if err := m.proc.Cmd.Process.Signal(sig); err != nil {
		return err
	}
	m.frozen = frozen
	return nil
}

// Frozen reports whether the member is frozen by Freeze.
func (m *EtcdMember) Frozen() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.frozen
}

// Running reports whether the member's process runs (frozen or not).
func (m *EtcdMember) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc != nil && m.proc.Running()
}

// Port returns the member's client port.
func (m *EtcdMember) Port() int {
	i := strings.LastIndexByte(m.ClientURL, ':')
	p, _ := strconv.Atoi(m.ClientURL[i+1:])
	return p
}

// Client returns a client on this member's endpoint only (no failover), closed by t.Cleanup.
func (m *EtcdMember) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	return newEtcdClient(t, clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

// Status asks this member alone for its status (a fresh connection each time, so a frozen
// member makes it wait for ctx).
func (m *EtcdMember) Status(ctx context.Context) (*clientv3.StatusResponse, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	return cli.Status(ctx, m.ClientURL)
}

// WatchStreams returns the number of watch streams the member serves (etcd's
// etcd_debugging_mvcc_watch_stream_total gauge from its /metrics), which tells which member
// a process under test watches on. It fails when the member does not answer within timeout.
func (m *EtcdMember) WatchStreams(timeout time.Duration) (int, error) {
	return watchStreams(m.ClientURL, timeout)
}

// Endpoints returns every member's client URL, for clientv3.Config.Endpoints or a Corefile's
// endpoint line.
func (c *EtcdCluster) Endpoints() []string {
	out := make([]string, 0, len(c.Members))
	for _, m := range c.Members {
		out = append(out, m.ClientURL)
	}
	return out
}

// Client returns a client on every member's endpoint, closed by t.Cleanup.
func (c *EtcdCluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	return newEtcdClient(t, c.ClientConfig(t))
}

// ClientOfOthers returns a client of every member but m, closed by t.Cleanup: a test's reads
// and writes while m is frozen, which a client that also knows m would send to it now and then
// and wait on (a test's client has no stall detection).
func (c *EtcdCluster) ClientOfOthers(t testing.TB, m *EtcdMember) *clientv3.Client {
	t.Helper()
	cfg := c.ClientConfig(t)
	cfg.Endpoints = nil
	for _, o := range c.Others(m) {
		cfg.Endpoints = append(cfg.Endpoints, o.ClientURL)
	}
	return newEtcdClient(t, cfg)
}

// Member returns the member whose ID is id (a response header's MemberId), or nil.
func (c *EtcdCluster) Member(id uint64) *EtcdMember {
	for _, m := range c.Members {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// Others returns every member but m.
func (c *EtcdCluster) Others(m *EtcdMember) []*EtcdMember {
	var out []*EtcdMember
	for _, o := range c.Members {
		if o != m {
			out = append(out, o)
		}
	}
	return out
}

// WaitLeader polls the members that are not frozen until one of them reports a leader, and
// returns the leader's member; it fails the test after timeout.
func (c *EtcdCluster) WaitLeader(t testing.TB, timeout time.Duration) *EtcdMember {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		for _, m := range c.Members {
			if m.Frozen() || !m.Running() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			st, err := m.Status(ctx)
			cancel()
			if err != nil {
				last = err
				continue
			}
			if l := c.Member(st.Leader); l != nil && st.Leader != 0 {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("testenv: etcd cluster: no leader within %s (last error %v)", timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
