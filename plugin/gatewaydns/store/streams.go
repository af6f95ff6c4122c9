package store

import (
	"context"

	"google.golang.org/grpc/stats"
)

// watchMethod is the gRPC method of an etcd watch stream.
const watchMethod = "/etcdserverpb.Watch/Watch"

// streamCounter counts the client's watch streams as gRPC sees them: from the moment one is
// asked for (a stream waiting for a connection included, which is how a stream leaks while
// etcd is down) until it ends. gRPC tells Begin and End once each per attempt of a stream.
type streamCounter struct{ g Gauge }

type watchTag struct{}

func (s streamCounter) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if info.FullMethodName == watchMethod {
		return context.WithValue(ctx, watchTag{}, true)
	}
	return ctx
}

func (s streamCounter) HandleRPC(ctx context.Context, st stats.RPCStats) {
	if ctx.Value(watchTag{}) == nil {
		return
	}
	switch st.(type) {
	case *stats.Begin:
		s.g.Inc()
	case *stats.End:
		s.g.Dec()
	}
}

func (streamCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (streamCounter) HandleConn(context.Context, stats.ConnStats)                       {}
