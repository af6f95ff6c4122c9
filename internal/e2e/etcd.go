package e2e

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// EtcdCallTimeout bounds each etcd request of a test's own: a hung etcd fails the test
// instead of hanging it.
const EtcdCallTimeout = 10 * time.Second

// KVInfo is a key's value, mod revision, create revision and lease.
type KVInfo struct {
	Value     string
	ModRev    int64
	CreateRev int64
	Lease     int64
}

// KeysUnder returns every key under prefix.
func KeysUnder(t testing.TB, cli *clientv3.Client, prefix string) map[string]KVInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), EtcdCallTimeout)
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("get %s: %v", prefix, err)
	}
	out := make(map[string]KVInfo, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = KVInfo{Value: string(kv.Value), ModRev: kv.ModRevision, CreateRev: kv.CreateRevision, Lease: kv.Lease}
	}
	return out
}

// PutEtcd writes one key.
func PutEtcd(t testing.TB, cli *clientv3.Client, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), EtcdCallTimeout)
	defer cancel()
	if _, err := cli.Put(ctx, key, value); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// PutInTxns writes ops to etcd in transactions of etcd's default most operations (128).
func PutInTxns(t testing.TB, cli *clientv3.Client, ops []clientv3.Op) {
	t.Helper()
	for len(ops) > 0 {
		batch := ops[:min(128, len(ops))]
		ops = ops[len(batch):]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cli.Txn(ctx).Then(batch...).Commit()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// OwnKey is the deterministic key the writer of owner writes for name -> target.
func OwnKey(name, owner, target string) string {
	return record.Key(record.DefaultPrefix, name, owner, target)
}
