package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// tenKeys is an etcd holding /skydns/test/k00..k09 and a key beside that prefix.
func tenKeys(ctx context.Context, t *testing.T) *clientv3.Client {
	cli := testenv.StartEtcd(t).Client(t)
	for i := range 10 {
		if _, err := cli.Put(ctx, fmt.Sprintf("/skydns/test/k%02d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, "/skydns/testother", "not under the prefix"); err != nil {
		t.Fatal(err)
	}
	return cli
}

// ReadPages against a real etcd: every key in pages of the limit, all at the revision of the
// first page whatever is written between pages, and a compaction of that revision between
// pages is an error, not half a snapshot.
func TestReadPagesIsOneSnapshotInPages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cli := tenKeys(ctx, t)

	var between func()
	requests := 0
	get := func(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
		requests++
		if requests == 2 && between != nil {
			between()
		}
		return cli.Get(ctx, key, opts...)
	}
	var keys []string
	page := func(resp *clientv3.GetResponse) {
		for _, kv := range resp.Kvs {
			keys = append(keys, string(kv.Key))
		}
	}

	between = func() { // a write and a delete after the first page
		if _, err := cli.Put(ctx, "/skydns/test/k99", "late"); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Delete(ctx, "/skydns/test/k05"); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := readPages(ctx, get, "/skydns/test/", "", 0, 3, page)
	if err != nil {
		t.Fatal(err)
	}
	if requests != 4 || len(keys) != 10 || keys[5] != "/skydns/test/k05" || keys[9] != "/skydns/test/k09" {
		t.Fatalf("%d requests read %v at revision %d; want the 10 keys of the first page's revision in 4 pages", requests, keys, rev)
	}

	keys, requests = nil, 0
	between = func() {
		now, err := cli.Get(ctx, "x")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Compact(ctx, now.Header.Revision); err != nil {
			t.Fatal(err)
		}
	}
	_, err = readPages(ctx, get, "/skydns/test/", "", rev, 3, page)
	if !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("a read across a compaction of its revision: %v, want ErrCompacted", err)
	}
}

// ReadOn reads what a read cut short by its limit left: the keys after the last one it
// returned, at its revision, whatever was written since.
func TestReadOnReadsTheRestAtTheRevision(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cli := tenKeys(ctx, t)
	first, err := cli.Get(ctx, "/skydns/test/", clientv3.WithPrefix(), clientv3.WithLimit(4))
	if err != nil {
		t.Fatal(err)
	}
	if !first.More || len(first.Kvs) != 4 {
		t.Fatalf("a read with limit 4 of 10 keys: %d keys, more %v", len(first.Kvs), first.More)
	}
	if _, err := cli.Put(ctx, "/skydns/test/k99", "late"); err != nil {
		t.Fatal(err)
	}
	var keys []string
	get := func(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
		return cli.Get(ctx, key, opts...)
	}
	err = ReadOn(ctx, get, "/skydns/test/", string(first.Kvs[3].Key), first.Header.Revision, func(resp *clientv3.GetResponse) {
		for _, kv := range resp.Kvs {
			keys = append(keys, string(kv.Key))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 6 || keys[0] != "/skydns/test/k04" || keys[5] != "/skydns/test/k09" {
		t.Fatalf("read on after %s: %v, want k04..k09 of the first read's revision", first.Kvs[3].Key, keys)
	}
}
