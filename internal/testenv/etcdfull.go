package testenv

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The day etcd is full: its database reaches --quota-backend-bytes (WithEtcdArgs), it raises
// the NOSPACE alarm and refuses every write until an operator frees it and disarms the alarm.

// fillerKey is the key FillEtcd writes over.
const fillerKey = "/testenv-filler"

// FillEtcd writes 1 MiB values over one key through cli until etcd raises its NOSPACE alarm
// (the history keeps every value); it fails the test when etcd takes four times maxQuota.
func FillEtcd(t testing.TB, cli *clientv3.Client, maxQuota int64) {
	t.Helper()
	big := strings.Repeat("x", 1<<20)
	for i := int64(0); ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cli.Put(ctx, fillerKey, big)
		cancel()
		if errors.Is(err, rpctypes.ErrNoSpace) {
			return
		}
		if err != nil {
			t.Fatalf("testenv: filling etcd: %v", err)
		}
		if i > 4*maxQuota>>20 {
			t.Fatalf("testenv: etcd took four times its quota of %d bytes without raising NOSPACE", maxQuota)
		}
	}
}

// FreeEtcd is the operator's runbook for NOSPACE, through cli: the filler deleted, the history
// compacted, each of members (client URLs) defragmented, then every alarm disarmed. It returns
// when the disarm was answered.
func FreeEtcd(t testing.TB, cli *clientv3.Client, members ...string) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Delete(ctx, fillerKey)
	if err != nil {
		t.Fatalf("testenv: deleting the filler: %v", err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("testenv: compacting: %v", err)
	}
	for _, m := range members {
		if _, err := cli.Defragment(ctx, m); err != nil {
			t.Fatalf("testenv: defragmenting %s: %v", m, err)
		}
	}
	alarms, err := cli.AlarmList(ctx)
	if err != nil {
		t.Fatalf("testenv: listing the alarms: %v", err)
	}
	for _, a := range alarms.Alarms {
		if _, err := cli.AlarmDisarm(ctx, (*clientv3.AlarmMember)(a)); err != nil {
			t.Fatalf("testenv: disarming %v: %v", a, err)
		}
	}
	return time.Now()
}
