package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"github.com/gatewaydns/gatewaydns/internal/freeport"
)

// The days an etcd cluster changes under its clients: a member replaced (removed, and another
// added), the whole cluster restored from a snapshot. Call these from the test's goroutine,
// while nothing else reads c.Members.

// RemoveMember removes m from the cluster through another member and waits for its process to
// exit (a removed member stops itself); m is no longer in c.Members.
func (c *EtcdCluster) RemoveMember(t testing.TB, m *EtcdMember) {
	t.Helper()
	others := c.Others(m)
	if len(others) == 0 {
		t.Fatalf("testenv: cannot remove %s, the last member", m.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := others[0].Client(t)
	if err := reconfigure(ctx, func(ctx context.Context) error { _, err := cli.MemberRemove(ctx, m.ID); return err }); err != nil {
		t.Fatalf("testenv: removing etcd member %s: %v", m.Name, err)
	}
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	if p != nil {
		select {
		case <-p.Exited():
		case <-ctx.Done():
		}
	}
	m.stop(syscall.SIGKILL) // exited, or made to
	c.Members = others
	c.WaitLeader(t, 10*time.Second) // the member may have led
}

// AddMember adds a member to the cluster (member add through a member, then the new process
// started with --initial-cluster-state=existing on free ports), waits until it is healthy,
// and returns it; it is last in c.Members, and stops with the cluster.
func (c *EtcdCluster) AddMember(t testing.TB) *EtcdMember {
	t.Helper()
	ports, err := freeport.Take(2)
	if err != nil {
		t.Fatalf("testenv: finding free ports: %v", err)
	}
	dir := filepath.Dir(filepath.Dir(c.Members[0].DataDir))
	name := "m" + strconv.Itoa(c.named)
	c.named++
	m := &EtcdMember{
		Name:      name,
		ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		DataDir:   filepath.Join(dir, name, "data"),
		LogFile:   filepath.Join(dir, name+".log"),
		existing:  true,
		c:         c,
	}
	// Stopped, and its log shown on failure, with the cluster (c.Members), not when the caller
	// ends: a subtest that adds a member leaves it to the test that owns the cluster.
	logOnFailure(c.t, "etcd member "+name, m.LogFile)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := c.Client(t)
	err = reconfigure(ctx, func(ctx context.Context) error {
		resp, err := cli.MemberAdd(ctx, []string{m.PeerURL})
		if err == nil {
			m.ID = resp.Member.ID
			return nil
		}
		if !strings.Contains(err.Error(), "already exists") {
			return err
		}
		// An attempt that timed out was applied: the member is there.
		list, err := cli.MemberList(ctx)
		if err != nil {
			return err
		}
		for _, mem := range list.Members {
			if slices.Contains(mem.PeerURLs, m.PeerURL) {
				m.ID = mem.ID
				return nil
			}
		}
		return fmt.Errorf("member with peer URL %s neither added nor listed", m.PeerURL)
	})
	if err != nil {
		t.Fatalf("testenv: adding etcd member %s: %v", name, err)
	}
	c.Members = append(c.Members, m)
	if err := m.launch(FindBinary(t, "etcd"), c.initialCluster()); err != nil {
		t.Fatalf("testenv: starting etcd member %s: %v", name, err)
	}
	if err := m.waitHealthy(30 * time.Second); err != nil {
		t.Fatalf("testenv: etcd member %s: %v", name, err)
	}
	return m
}

// reconfigure makes a membership change, asked again while etcd refuses it for the moment:
// its strict reconfiguration check wants every member that stays connected for 5 s ("unhealthy
// cluster", "not enough started members"), and a change right after the leader left times out
// while the others elect one.
func reconfigure(ctx context.Context, change func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second) // etcd's own request timeout is about that
		err := change(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !slices.ContainsFunc(
			[]string{"unhealthy cluster", "not enough started members", "request timed out", "leader changed", "no leader", "deadline exceeded"},
			func(s string) bool { return strings.Contains(err.Error(), s) }) {
			return err
		}
		time.Sleep(100 * time.Millisecond) // etcd's own clock: it answers again at once
	}
}

// RestartAll kills every member (SIGKILL) and starts them all again on their data, as a power
// loss of the whole cluster; it returns once every member is healthy.
func (c *EtcdCluster) RestartAll(t testing.TB) {
	t.Helper()
	for _, m := range c.Members {
		m.stop(syscall.SIGKILL)
	}
	c.launchAll(t)
}

// launchAll starts every member and waits until each is healthy (a member alone waits for a
// quorum of its peers).
func (c *EtcdCluster) launchAll(t testing.TB) {
	t.Helper()
	bin := FindBinary(t, "etcd")
	cluster := c.initialCluster()
	for _, m := range c.Members {
		if err := m.launch(bin, cluster); err != nil {
			t.Fatalf("testenv: starting etcd member %s: %v", m.Name, err)
		}
	}
	for _, m := range c.Members {
		if err := m.waitHealthy(30 * time.Second); err != nil {
			t.Fatalf("testenv: etcd member %s: %v", m.Name, err)
		}
	}
}

func (c *EtcdCluster) initialCluster() string {
	var initial []string
	for _, o := range c.Members {
		initial = append(initial, o.Name+"="+o.PeerURL)
	}
	return strings.Join(initial, ",")
}

// Snapshot saves a snapshot of the cluster's data (through its first member, as `etcdctl
// snapshot save` does) into the test's temporary directory and returns its path.
func (c *EtcdCluster) Snapshot(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snapshot.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := c.ClientConfig(t)
	cfg.Endpoints = cfg.Endpoints[:1]
	if _, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, path); err != nil {
		t.Fatalf("testenv: etcd snapshot: %v", err)
	}
	return path
}

// Restore is the documented disaster recovery: every member stopped, its data replaced by
// `etcdutl snapshot restore` of snap (with --bump-revision bump --mark-compacted when bump is
// not 0), on the same names, ports and cluster token, and started again. It returns once every
// member is healthy.
func (c *EtcdCluster) Restore(t testing.TB, snap string, bump uint64) {
	t.Helper()
	etcdutl := FindBinary(t, "etcdutl")
	for _, m := range c.Members {
		m.stop(syscall.SIGKILL)
	}
	cluster := c.initialCluster()
	for _, m := range c.Members {
		if err := os.RemoveAll(m.DataDir); err != nil {
			t.Fatal(err)
		}
		args := []string{"snapshot", "restore", snap, "--name=" + m.Name, "--data-dir=" + m.DataDir,
			"--initial-cluster=" + cluster, "--initial-cluster-token=" + clusterToken,
			"--initial-advertise-peer-urls=" + m.PeerURL}
		if bump != 0 {
			args = append(args, "--bump-revision="+strconv.FormatUint(bump, 10), "--mark-compacted")
		}
		if _, err := runOutput("", etcdutl, args...); err != nil {
			t.Fatalf("testenv: restoring etcd member %s: %v", m.Name, err)
		}
		m.existing = false
	}
	c.launchAll(t)
	// The restored members have the IDs the token and their peer URLs make, as before the
	// restore when the cluster was started alike; learnt again in any case.
	if err := c.learnIDs(); err != nil {
		t.Fatalf("testenv: restored etcd cluster: %v", err)
	}
	if slices.ContainsFunc(c.Members, func(m *EtcdMember) bool { return m.ID == 0 }) {
		t.Fatal("testenv: a restored member has no ID")
	}
}
