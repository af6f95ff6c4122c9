package testenv

import (
	"context"
	"testing"
	"time"
)

// TestEtcdClusterFreezeThaw: three members start and agree; a frozen member (SIGSTOP, a hung
// host) does not answer a Status call while the other two do and still take writes; thawed,
// it answers again and has the write.
func TestEtcdClusterFreezeThaw(t *testing.T) {
	start := time.Now()
	c := StartEtcdCluster(t, 3)
	t.Logf("3-member cluster started in %v: %v", time.Since(start).Round(time.Millisecond), c.Endpoints())
	ids := map[uint64]bool{}
	for _, m := range c.Members {
		if m.ID == 0 || ids[m.ID] {
			t.Fatalf("member %s has ID %x (IDs so far %v)", m.Name, m.ID, ids)
		}
		ids[m.ID] = true
	}
	mustPut(t, c.Client(t), "/cluster/a", "1")

	frozen := c.Members[1]
	frozen.Freeze()
	if !frozen.Frozen() || !frozen.Running() {
		t.Fatalf("after Freeze: frozen %v, running %v", frozen.Frozen(), frozen.Running())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	asked := time.Now()
	_, err := frozen.Status(ctx)
	cancel()
	if err == nil {
		t.Fatalf("Status of the frozen member %s answered", frozen.Name)
	}
	if took := time.Since(asked); took < 900*time.Millisecond {
		t.Fatalf("Status of the frozen member failed after %v, not by timing out: %v", took, err)
	}
	for _, m := range c.Others(frozen) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := m.Status(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Status of healthy member %s while %s is frozen: %v", m.Name, frozen.Name, err)
		}
		if st.Header.MemberId != m.ID {
			t.Errorf("member %s answered with MemberId %x, want %x", m.Name, st.Header.MemberId, m.ID)
		}
	}
	leader := c.WaitLeader(t, 10*time.Second)
	if leader == frozen {
		t.Fatalf("the frozen member %s is still reported as leader", frozen.Name)
	}
	mustPut(t, c.Others(frozen)[0].Client(t), "/cluster/b", "2")

	frozen.Thaw()
	if frozen.Frozen() {
		t.Fatal("still frozen after Thaw")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := frozen.Status(ctx); err != nil {
		t.Fatalf("Status of the thawed member: %v", err)
	}
	// The thawed member catches up with the write made while it was frozen (a linearizable
	// read through it goes by the leader's commit index).
	mustGet(t, frozen.Client(t), "/cluster/b", "2")

	// Stop and Restart keep the member's data and ports.
	m := c.Members[2]
	url := m.ClientURL
	m.Stop()
	if m.Running() {
		t.Fatal("running after Stop")
	}
	mustPut(t, c.Members[0].Client(t), "/cluster/c", "3")
	m.Restart()
	if m.ClientURL != url || !m.Running() {
		t.Fatalf("after Restart: url %s (was %s), running %v", m.ClientURL, url, m.Running())
	}
	mustGet(t, m.Client(t), "/cluster/c", "3")

	// A member left frozen is thawed and stopped by the cleanup (the test would hang in
	// cleanup otherwise).
	c.Members[0].Freeze()
}
