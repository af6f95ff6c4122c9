package writer

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

var log = clog.NewWithPlugin("gatewaydns")

// DefaultLeaderPrefix is where writers elect their leaders: one election per owner id, at
// <prefix>/<owner>. It is outside the records' prefix, so no server of the zone ever reads it.
const DefaultLeaderPrefix = "/gatewaydns/leader"

// dryRunElection is appended to the leader prefix for the election of dry-run writers
// (<prefix>-dry-run/<owner>): they elect among themselves, so that one of them logs, and never
// in the election of the owner's real writers, where a dry-run leader would hold the owner's
// leadership and no replica would write. The prefix is outside the real elections' keys
// (<prefix>/<owner>/...) whatever the owner id.
const dryRunElection = "-dry-run"

// DefaultElectionTTL is how long a crashed leader keeps its leadership: a successor takes over
// at most this long (and etcd's lease expiry check, every 500 ms) after the leader's process is
// gone; at once when it shuts down cleanly, or when it comes back under the same identity.
//
// 2 s is etcd's shortest lease with its default heartbeat and election timeout (etcd raises a
// shorter TTL to 1.5 election timeouts; NewElection's grant then keeps the TTL etcd gives). A
// short TTL costs no safety: every write of a term is fenced on its election key, which is gone
// before a successor can lead, so a leader whose session lapsed can no longer write, whatever
// it believes. What it costs is tolerance: the session is kept alive every TTL/4, each attempt
// bounded by TTL/4 and tried again on another member, so that a frozen etcd member or a lost
// keep-alive costs a quarter of the TTL, not the session.
const DefaultElectionTTL = 2 * time.Second

// ErrNotLeader is returned for a write by a writer that does not lead, or that led and was
// deposed: etcd rejected the transaction because its election key is gone.
var ErrNotLeader = errors.New("not the elected writer for this owner")

// Election elects one writer among the replicas of one owner.
type Election struct {
	client   *clientv3.Client
	prefix   string // the election's key prefix, <leader prefix>/<owner>
	identity string // the value a leader puts at its key: who it is, for people
	ttl      int    // session TTL in seconds
	// attempt bounds each request of a campaign but the wait for the leader to go: with etcd
	// refusing or not answering, Campaign fails (and its caller says so and retries) instead
	// of hanging in the client's retries.
	attempt time.Duration
	// reached, when set, is told each answer or failure of etcd during a campaign: a standby
	// says whether etcd answers while it waits.
	reached func(error)
	// standingBy, when set, is told that the campaign waits behind the key of another replica
	// whose session is kept alive: a healthy leader (healthyLeader).
	standingBy func()
	// wrote, when set, is told that etcd took a write of the campaign (its session's lease, its
	// key): a refusal of the writes (refusal.go) is over, also for a replica that then stands by.
	wrote func()
	// members keeps the session's keep-alive off members that stop answering; a failed
	// campaign tells it through the caller's store.Pause.
	members *store.Members

	// abandoned are leases of this election's sessions given up while etcd did not answer:
	// their keys stay in the election, in front of every later candidate, until revoked or
	// expired. The next campaign revokes them first.
	mu         sync.Mutex
	abandoned  []clientv3.LeaseID
	raised     sync.Once    // etcd raised the TTL: logged once
	grantedTTL atomic.Int64 // seconds, as etcd last granted a session
}

// maxAbandoned bounds the abandoned leases remembered: beyond a few, the oldest have expired.
const maxAbandoned = 8

// NewElection prepares the election of owner's writers under leaderPrefix (DefaultLeaderPrefix
// when empty). identity is stored at the leader's key for people to read ("host/pid"); ttl is
// the session's lease (DefaultElectionTTL when 0, at least 1s).
func NewElection(client *clientv3.Client, leaderPrefix, owner, identity string, ttl time.Duration) *Election {
	if leaderPrefix == "" {
		leaderPrefix = DefaultLeaderPrefix
	}
	if ttl <= 0 {
		ttl = DefaultElectionTTL
	}
	secs := int((ttl + time.Second - 1) / time.Second)
	return &Election{
		client:   client,
		prefix:   path.Join("/", leaderPrefix, owner),
		identity: identity,
		ttl:      max(secs, 1),
		attempt:  DefaultAttemptTimeout,
	}
}

// Prefix is the election's key prefix; the leader's key is below it.
func (e *Election) Prefix() string { return e.prefix }

// Campaign blocks until this replica leads, or ctx ends. Each call starts a new session (an etcd
// lease kept alive in the background); the Term ends when that session is lost or ctx ends.
// Every request is bound to ctx: with etcd unreachable or black-holed Campaign returns as soon
// as ctx ends. (concurrency.Election.Campaign is not used: on cancel it resigns with the
// client's context, which hangs while etcd does not answer.)
func (e *Election) Campaign(ctx context.Context) (*Term, error) {
	if err := e.revokeAbandoned(ctx); err != nil {
		return nil, fmt.Errorf("election %s: %w", e.prefix, err)
	}
	gctx, cancel := context.WithTimeout(ctx, e.attempt)
	grant, err := e.client.Grant(gctx, int64(e.ttl))
	cancel()
	e.tell(ctx, err)
	if err != nil {
		return nil, fmt.Errorf("election %s: session: %w", e.prefix, err)
	}
	e.tookWrite()
	liveSessions.Store(grant.ID, struct{}{})
	alive, stop := keepAlive(ctx, e.client, e.members, grant.ID, e.grant(grant.TTL), e.attempt)
	t := &Term{Key: fmt.Sprintf("%s/%x", e.prefix, grant.ID), lease: grant.ID, alive: alive, stopKeepAlive: stop, client: e.client, el: e}
	if err := e.campaign(ctx, t); err != nil {
		t.release()
		return nil, fmt.Errorf("election %s: campaign: %w", e.prefix, err)
	}
	return t, nil
}

// campaign puts the term's key (or finds it from an earlier call with the same lease) and
// waits until every older key of the election is gone: the oldest key leads.
func (e *Election) campaign(ctx context.Context, t *Term) error {
	lease := t.lease
	tctx, cancel := context.WithTimeout(ctx, e.attempt)
	defer cancel()
	resp, err := e.client.Txn(tctx).
		If(clientv3.Compare(clientv3.CreateRevision(t.Key), "=", 0)).
		Then(clientv3.OpPut(t.Key, e.identity, clientv3.WithLease(lease))).
		Else(clientv3.OpGet(t.Key)).Commit()
	e.tell(ctx, err)
	if err != nil {
		return err
	}
	e.tookWrite()
	t.Rev = resp.Header.Revision
	if !resp.Succeeded {
		t.Rev = resp.Responses[0].GetResponseRange().Kvs[0].CreateRevision
	}
	for {
		// The newest key older than ours: when it is gone, look again (it may have had
		// older ones itself).
		gctx, cancel := context.WithTimeout(ctx, e.attempt)
		older, err := e.client.Get(gctx, e.prefix+"/", clientv3.WithPrefix(),
			clientv3.WithMaxCreateRev(t.Rev-1), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend),
			clientv3.WithLimit(1))
		cancel()
		if err != nil {
			return err
		}
		if len(older.Kvs) == 0 {
			return nil
		}
		if ghost := older.Kvs[0]; e.isGhost(ghost.Value, ghost.Lease) {
			if err := e.exorcise(ctx, string(ghost.Key), clientv3.LeaseID(ghost.Lease)); err != nil {
				return err
			}
			continue
		}
		if err := e.standBy(ctx, older.Kvs[0], older.Header.Revision, t.alive); err != nil {
			return err
		}
	}
}

// grant is the session's TTL as etcd granted it: etcd raises a TTL below its minimum lease TTL
// (1.5 election timeouts, rounded up to whole seconds), and the keep-alive must follow the TTL
// the lease has. That a leader's death takes longer to be seen is said once.
func (e *Election) grant(ttl int64) time.Duration {
	if ttl > int64(e.ttl) {
		e.raised.Do(func() {
			log.Warningf("etcd granted the election %s a TTL of %ds for the %ds asked (its minimum lease TTL, 1.5 election timeouts): a standby takes over up to %ds after a leader's crash",
				e.prefix, ttl, e.ttl, ttl)
		})
	}
	e.grantedTTL.Store(ttl)
	return e.sessionTTL()
}

// sessionTTL is the TTL of this election's sessions: as etcd last granted it, else as asked.
func (e *Election) sessionTTL() time.Duration {
	return time.Duration(max(e.grantedTTL.Load(), int64(e.ttl))) * time.Second
}

// liveSessions are the leases of this process's election sessions, from their grant until
// they are given up: what a key of this replica's identity on another lease is not.
var liveSessions sync.Map // clientv3.LeaseID -> struct{}

// isGhost reports whether a key that holds value on lease is a previous incarnation of this
// replica: its identity (the pod's name, stable across a container restart) on a lease that
// no session of this process holds. That is a process that crashed and was restarted, or a
// session this process lost in an outage and could not revoke: it writes nothing, and waiting
// for its TTL would leave the owner without a writer that long. A live replica of another pod
// has another identity; identities must differ between live replicas (pod names do).
func (e *Election) isGhost(value []byte, lease int64) bool {
	if string(value) != e.identity {
		return false
	}
	_, live := liveSessions.Load(clientv3.LeaseID(lease))
	return !live
}

// abandon remembers a lease whose revoke failed.
func (e *Election) abandon(lease clientv3.LeaseID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.abandoned = append(e.abandoned, lease)
	if n := len(e.abandoned); n > maxAbandoned {
		e.abandoned = e.abandoned[n-maxAbandoned:]
	}
}

// revokeAbandoned revokes the leases abandoned so far, each bounded by the attempt timeout.
func (e *Election) revokeAbandoned(ctx context.Context) error {
	e.mu.Lock()
	todo := e.abandoned
	e.abandoned = nil
	e.mu.Unlock()
	for i, lease := range todo {
		if err := e.exorcise(ctx, "", lease); err != nil {
			for _, l := range todo[i:] {
				e.abandon(l)
			}
			return err
		}
	}
	return nil
}

// exorcise revokes a ghost's lease, which deletes its key (a key already gone is fine).
func (e *Election) exorcise(ctx context.Context, key string, lease clientv3.LeaseID) error {
	rctx, cancel := context.WithTimeout(ctx, e.attempt)
	defer cancel()
	_, err := e.client.Revoke(rctx, lease)
	e.tell(ctx, err)
	if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("revoking this replica's previous session %x %s: %w", lease, key, err)
	}
	return nil
}

func (e *Election) tookWrite() {
	if e.wrote != nil {
		e.wrote()
	}
}

func (e *Election) tell(ctx context.Context, err error) {
	if e.reached != nil && ctx.Err() == nil {
		e.reached(err)
	}
}

// Term is one period of leadership.
type Term struct {
	// Key is the leader's election key, Rev its create revision: the fence.
	Key string
	Rev int64

	lease         clientv3.LeaseID
	alive         context.Context // the session: cancelled when its lease is lost or given up
	stopKeepAlive context.CancelFunc
	client        *clientv3.Client
	el            *Election
}

// Fence is the condition every write of this term carries: the election key this term created
// still exists. Once the leader resigned, or its session expired, the key is gone (a
// successor's key has another create revision) and etcd rejects the transaction.
func (t *Term) Fence() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(t.Key), "=", t.Rev)
}

// Done is closed when the term's session is lost (its lease expired or was revoked, the
// campaign's context ended, or the client closed). The term may have ended earlier: a write
// failing with ErrNotLeader says so.
func (t *Term) Done() <-chan struct{} { return t.alive.Done() }

// Lease is the term's session lease.
func (t *Term) Lease() clientv3.LeaseID { return t.lease }

// Resign ends the term: it deletes the election key, so a successor takes over at once, and
// revokes the session's lease. Both are best effort, bounded by ctx and by resignTimeout: with
// etcd unreachable the key expires with the session's TTL.
func (t *Term) Resign(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resignTimeout)
	defer cancel()
	_, err := t.client.Txn(ctx).If(t.Fence()).Then(clientv3.OpDelete(t.Key)).Commit()
	t.revoke(ctx)
	return err
}

// release revokes the session's lease (which deletes the key of an unfinished campaign),
// bounded by resignTimeout.
func (t *Term) release() {
	ctx, cancel := context.WithTimeout(context.Background(), resignTimeout)
	defer cancel()
	t.revoke(ctx)
}

func (t *Term) revoke(ctx context.Context) {
	// The keep-alive stops first; from here on the lease is a ghost if it outlives the revoke.
	t.stopKeepAlive()
	liveSessions.Delete(t.lease)
	if _, err := t.client.Revoke(ctx, t.lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.el.abandon(t.lease)
	}
}
