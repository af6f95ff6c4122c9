package store

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// whyTimeout bounds Why: a connection being dialed is waited for that long.
const whyTimeout = 2 * time.Second

// Why asks etcd for its status through c without waiting for a connection (gRPC's fail-fast),
// and returns the error. A request of the client waits for a connection until its context
// ends, and then says no more than that; this one fails with what the last attempt to connect
// met: a refused or unreachable address, a name that does not resolve, a certificate. nil when
// etcd answers.
func Why(ctx context.Context, c *clientv3.Client) error {
	ctx, cancel := context.WithTimeout(ctx, whyTimeout)
	defer cancel()
	_, err := pb.NewMaintenanceClient(c.ActiveConnection()).Status(ctx, &pb.StatusRequest{}, grpc.WaitForReady(false))
	return err
}
