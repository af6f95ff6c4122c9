package writer_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// wtSlowTxns is a client whose transactions each take 2 ms longer, as on a remote etcd, and
// that notes how many were in flight at once.
type wtSlowTxns struct {
	mu             sync.Mutex
	inFlight, most int
}

func (s *wtSlowTxns) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if !strings.HasSuffix(method, "/Txn") {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	s.mu.Lock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.mu.Unlock()
	time.Sleep(2 * time.Millisecond)
	err := invoker(ctx, method, req, reply, cc, opts...)
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
	return err
}

// A reconcile of many names keeps several transactions in flight, reads and commits: one at a
// time, a remote etcd's round trips add up (100k names are some 1600 transactions).
func TestWriterKeepsSeveralTransactionsInFlight(t *testing.T) {
	e := testenv.StartEtcd(t)
	slow := &wtSlowTxns{}
	cfg := e.ClientConfig(t)
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithChainUnaryInterceptor(slow.intercept))
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	var eps []record.Endpoint
	for i := range 2000 {
		eps = append(eps, wtEP(wtName(fmt.Sprintf("n%d", i)), fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)))
	}
	obs := &wtObserver{}
	wtStart(t, cli, writer.Config{Owner: "c1", Desired: wtWant(eps...), Observer: obs})
	wtEventually(t, 20*time.Second, "synced", func() bool { return obs.syncCount() > 0 })
	if n := len(wtKeys(t, e.Client(t))); n != 2000 {
		t.Fatalf("%d keys, want 2000", n)
	}
	slow.mu.Lock()
	defer slow.mu.Unlock()
	if slow.most < 2 {
		t.Errorf("at most %d transaction in flight, want several", slow.most)
	}
}
