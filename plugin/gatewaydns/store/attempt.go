package store

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/backoff"
)

// Watches are the watch streams of one attempt (a watch session, a campaign, a term): every
// Watch and RequestProgress made through them uses streams of their own, and Close ends them
// all. The client's shared watcher cannot give that: it keeps a stream that was asked for while
// etcd was down (waiting for a connection, past the cancel of every watch on it) and opens it
// when etcd returns, one per retry of the outage, for the life of the process.
type Watches struct {
	clientv3.Watcher
}

// NewWatches starts an attempt's watches on c's connection; nothing is opened until a Watch.
func NewWatches(c *clientv3.Client) *Watches {
	return &Watches{Watcher: clientv3.NewWatcher(c)}
}

// closeWait bounds Close. Closing a stream cancels its context, which ends it at once in
// every state (refused, black-holed, mid-dial); the bound keeps a hang in the client from
// holding up a stop or a reload.
const closeWait = 2 * time.Second

// Close ends every stream of the attempt; it returns once they have ended, or after closeWait.
func (w *Watches) Close() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Watcher.Close()
	}()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// Reconnected returns a channel that is closed when c's connection to etcd next becomes ready
// after being anything else; a connection ready now must first be lost. It watches until then
// or until ctx ends, whichever comes first: the caller's ctx owns the goroutine.
func Reconnected(ctx context.Context, c *clientv3.Client) <-chan struct{} {
	up := make(chan struct{})
	conn := c.ActiveConnection()
	go onStateChanges(ctx, conn, func(from, to connectivity.State) bool {
		if to == connectivity.Ready && from != connectivity.Ready {
			close(up)
			return false
		}
		return true
	})
	return up
}

// onStateChanges calls changed with each change of conn's state, from the state it is in when
// called, until ctx ends, the connection shuts down, or changed returns false.
func onStateChanges(ctx context.Context, conn *grpc.ClientConn, changed func(from, to connectivity.State) bool) {
	state := conn.GetState()
	for conn.WaitForStateChange(ctx, state) {
		next := conn.GetState()
		if next == connectivity.Shutdown || !changed(state, next) {
			return
		}
		state = next
	}
}

// Pause waits b's next delay after a failure, cut short when the connection to etcd comes back:
// an etcd that answers again is used at gRPC's next dial (within a second), not after the
// back-off's full sleep, while one that stays down is still asked less and less often. It
// tells m (nil: none) of the failure first, so that the next attempt goes to a member that
// answers; the connection is watched from before that, so a return during it counts. It
// reports false when ctx ended.
func Pause(ctx context.Context, c *clientv3.Client, b *backoff.Backoff, m *Members) bool {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	up := Reconnected(pctx, c)
	m.Suspect(pctx)
	b.Wait(pctx, up)
	return ctx.Err() == nil
}
