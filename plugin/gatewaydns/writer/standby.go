// Standing by: a campaign waits for the key of the replica in front of it to go, and tells
// whether that replica is seen alive meanwhile (a healthy leader, for the replica's readiness).

package writer

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

// standBy waits until the older key kv is deleted (waitDelete), and meanwhile tells standingBy
// once the replica it belongs to is seen keeping its session alive (healthyLeader).
func (e *Election) standBy(ctx context.Context, kv *mvccpb.KeyValue, rev int64, session context.Context) error {
	if e.standingBy != nil && string(kv.Value) != e.identity {
		wctx, cancel := context.WithCancel(ctx)
		var checking sync.WaitGroup
		checking.Go(func() {
			if e.healthyLeader(wctx, clientv3.LeaseID(kv.Lease)) {
				e.standingBy()
			}
		})
		defer checking.Wait()
		defer cancel()
	}
	return waitDelete(ctx, e.client, string(kv.Key), rev, session)
}

// healthyLeader reports, once it is so, that the session of lease is kept alive; false when ctx
// ends first. A key lives as long as its lease, also a crashed leader's, up to the TTL after its
// last keep-alive: that its key exists says nothing. A lease kept alive every TTL/4 always has
// more than half its TTL left, while the lease of a process that is gone has less than half left
// half a TTL after it was first seen. etcd tells the time left in whole seconds, rounded down:
// after half a TTL, a live lease of the 2 s TTL reads 1, a dead one 0. So every half TTL: is
// there at least half the granted TTL left?
func (e *Election) healthyLeader(ctx context.Context, lease clientv3.LeaseID) bool {
	half := e.sessionTTL() / 2 // the leader's lease has the TTL etcd gave this replica's
	t := time.NewTicker(half)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		if lease == clientv3.NoLease {
			return false // a key put by hand, not a replica's: it never goes by itself
		}
		actx, cancel := context.WithTimeout(ctx, e.attempt)
		resp, err := e.client.TimeToLive(actx, lease)
		cancel()
		if err == nil && resp.GrantedTTL > 0 && 2*resp.TTL >= resp.GrantedTTL {
			return true
		}
	}
}

// errSessionLost: the campaign's session ended (its keep-alive went unanswered for the TTL)
// while it waited for the leader to go.
var errSessionLost = errors.New("session lost while waiting for the leader")

// waitDelete returns when key is deleted after rev, or ctx ends, or the session is lost: a
// standby whose etcd stops answering learns it from its session's keep-alive (within the TTL)
// and campaigns again, which fails and says so, instead of waiting on a silent watch.
func waitDelete(ctx context.Context, client *clientv3.Client, key string, rev int64, session context.Context) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	// Watch itself does not return until the client's watch stream takes the request, which
	// it does only once the stream is open: when etcd stops answering just before, that is
	// never. The session's end must end that wait too, not only the one for events.
	defer context.AfterFunc(session, cancel)()
	// The wait's own stream, ended with it: a campaign retried through an outage leaves none.
	watches := store.NewWatches(client)
	defer watches.Close()
	wc := watches.Watch(wctx, key, clientv3.WithRev(rev+1), clientv3.WithFilterPut())
	for {
		select {
		case <-session.Done():
			// The session's context is the campaign's too: say which ended.
			if err := ctx.Err(); err != nil {
				return err
			}
			return errSessionLost
		case resp, ok := <-wc:
			if err := ctx.Err(); err != nil {
				return err
			}
			if session.Err() != nil {
				return errSessionLost
			}
			if !ok {
				return errors.New("watch of the leader key closed")
			}
			if err := resp.Err(); err != nil {
				return err
			}
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypeDelete {
					return nil
				}
			}
		}
	}
}
