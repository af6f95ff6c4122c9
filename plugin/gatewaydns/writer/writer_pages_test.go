package writer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// wtLargestRead is a client that notes the most keys one range read answered with, alone
// (Range) or in a transaction.
type wtLargestRead struct {
	mu           sync.Mutex
	inTxn, alone int
}

func (l *wtLargestRead) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch r := reply.(type) {
	case *pb.RangeResponse:
		l.alone = max(l.alone, len(r.Kvs))
	case *pb.TxnResponse:
		for _, op := range r.Responses {
			if rr := op.GetResponseRange(); rr != nil {
				l.inTxn = max(l.inTxn, len(rr.Kvs))
			}
		}
	}
	return err
}

func (l *wtLargestRead) get() (inTxn, rangeAlone int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inTxn, l.alone
}

// A name with more names below it than one read of its range returns (the apex of a zone holds
// the whole zone): the writer reads its range on in pages, finds its own record wherever it
// sorts among the others, and no read answers with more keys than its limit.
func TestWriterReadsAnAncestorOfManyNamesInPages(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	top := wtName("top")
	own := record.Key("skydns", top, "c1", "10.0.0.1")
	suffix := own[len(own)-8:]
	// 1100 names below top, another owner's, each key sorting before top's own record: their
	// label starts with its suffix's first 7 characters and a '-', which sorts before any hex digit.
	var ops []clientv3.Op
	for i := range 1100 {
		name := fmt.Sprintf("%s-%d.%s", suffix[:7], i, top)
		ops = append(ops, clientv3.OpPut(record.Key("skydns", name, "other", "10.9.0.1"), `{"host":"10.9.0.1","ttl":30}`))
		if len(ops) == 100 {
			if _, err := cli.Txn(wtCtx(t)).Then(ops...).Commit(); err != nil {
				t.Fatal(err)
			}
			ops = nil
		}
	}

	largest := &wtLargestRead{}
	cfg := e.ClientConfig(t)
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithChainUnaryInterceptor(largest.intercept))
	watched, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watched.Close() })

	obs1 := &wtObserver{}
	_, stop1 := wtStart(t, watched, writer.Config{Owner: "c1", Desired: wtWant(wtEP(top, "10.0.0.1")), Observer: obs1})
	wtEventually(t, 10*time.Second, "first writer synced", func() bool { return obs1.syncCount() > 0 })
	if got := wtHosts(t, cli, top); len(got) != 1 || got[0] != "c1=10.0.0.1" {
		t.Fatalf("%s: %v, want c1=10.0.0.1", top, got)
	}
	stop1()

	// A restarted writer must find the record it wrote, behind the 1100 keys of the names
	// below, or it plans to create it again and fails.
	obs2 := &wtObserver{}
	_, _ = wtStart(t, watched, writer.Config{Owner: "c1", Desired: wtWant(wtEP(top, "10.0.0.1")), Observer: obs2})
	wtEventually(t, 10*time.Second, "second writer synced", func() bool { return obs2.syncCount() > 0 })
	if err := obs2.failedName(top); err != nil {
		t.Fatalf("%s failed: %v", top, err)
	}
	if obs2.get(func(o *wtObserver) bool { return o.commits != 0 }) {
		t.Error("the restarted writer committed a transaction")
	}
	if inTxn, alone := largest.get(); inTxn > 1000 || alone > store.PageSize {
		t.Errorf("the largest read answered %d keys in a transaction, %d alone; want at most 1000 and %d", inTxn, alone, store.PageSize)
	}
}

// wtReadsBetweenCommits is a client that notes the most names read (range reads in
// transactions without a put) between two transactions that put.
type wtReadsBetweenCommits struct {
	mu         sync.Mutex
	since, max int
}

func (r *wtReadsBetweenCommits) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if txn, ok := req.(*pb.TxnRequest); ok {
		ranges, puts := 0, 0
		for _, op := range txn.Success {
			switch {
			case op.GetRequestRange() != nil:
				ranges++
			case op.GetRequestPut() != nil:
				puts++
			}
		}
		r.mu.Lock()
		if puts > 0 {
			r.since = 0
		} else {
			r.since += ranges
			r.max = max(r.max, r.since)
		}
		r.mu.Unlock()
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// A reconcile of more names than a part reads, plans and commits them a part at a time: what
// a full resync of 100k names holds at once (the keys read, the plan, the requests) is a
// part's, not all of it. Every name is still published, in one resync.
func TestWriterReconcilesManyNamesInParts(t *testing.T) {
	e := testenv.StartEtcd(t)
	n := 2*writer.NamesPerPart + 100
	eps := make([]record.Endpoint, n)
	for i := range n {
		eps[i] = wtEP(wtName(fmt.Sprintf("r%d", i)), fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255))
	}
	reads := &wtReadsBetweenCommits{}
	cfg := e.ClientConfig(t)
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithChainUnaryInterceptor(reads.intercept))
	watched, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watched.Close() })

	obs := &wtObserver{}
	wtStart(t, watched, writer.Config{Owner: "c1", Desired: wtWant(eps...), Observer: obs})
	wtEventually(t, 60*time.Second, "writer synced", func() bool { return obs.syncCount() > 0 })
	resp, err := e.Client(t).Get(wtCtx(t), "/skydns/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != int64(n) {
		t.Errorf("%d keys in etcd after the first resync, want %d", resp.Count, n)
	}
	reads.mu.Lock()
	defer reads.mu.Unlock()
	if reads.max > writer.NamesPerPart {
		t.Errorf("%d names read before their commit started, want at most a part's %d", reads.max, writer.NamesPerPart)
	}
}
