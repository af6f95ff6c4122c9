package writer

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

// keepAlivesPerTTL is how many keep-alives a lease gets in its TTL.
const keepAlivesPerTTL = 4

// keepAliveRetry is how soon a keep-alive that failed is tried again: on the member the
// client's round robin picks next, well within the lease's TTL.
const keepAliveRetry = 200 * time.Millisecond

// keepAlive keeps lease (of ttl) alive until ctx ends, with one KeepAliveOnce every quarter of
// the TTL, each bounded by attempt and by a quarter of the TTL, tried again soon after a failure
// on the member that answers; the returned context is cancelled when ctx ends, when stop is
// called, when etcd says the lease is gone, or when no keep-alive succeeded for the TTL (the
// lease may be gone by then: the writer must not count on it). With the election's 2 s TTL, a
// keep-alive lost on a frozen member costs half a second, and the next is tried 200 ms later
// on another member, with more than half the TTL left.
//
// Not clientv3's KeepAlive: its keep-alives share one stream per client, and when that stream
// is on a frozen member it stays silent until gRPC's keepalive closes the connection, 10 s
// later, by which time an election session is lost, though the other members would have
// kept it alive (a writer whose raft leader froze stopped writing for over 12 s). Each of
// these attempts is a stream of its own, bounded by attempt, on whichever member answers.
func keepAlive(ctx context.Context, client *clientv3.Client, members *store.Members, lease clientv3.LeaseID, ttl, attempt time.Duration) (alive context.Context, stop context.CancelFunc) {
	alive, lost := context.WithCancel(ctx)
	attempt = min(attempt, ttl/keepAlivesPerTTL)
	go func() {
		defer lost()
		last := time.Now()
		// The first at once: an adopted lease may have little of its TTL left.
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			select {
			case <-alive.Done():
				return
			case <-t.C:
			}
			actx, cancel := context.WithTimeout(alive, attempt)
			_, err := client.KeepAliveOnce(actx, lease)
			cancel()
			wait := keepAliveRetry
			switch {
			case errors.Is(err, rpctypes.ErrLeaseNotFound):
				return
			case err == nil:
				last, wait = time.Now(), ttl/keepAlivesPerTTL
			case time.Since(last) >= ttl:
				return
			default:
				members.Suspect(alive) // the next attempt goes to a member that answers
			}
			t.Reset(wait)
		}
	}()
	return alive, lost
}
