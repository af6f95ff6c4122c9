package writer

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// DefaultLeaderPrefix is where writers elect their leaders: one election per owner id, at
// <prefix>/<owner>. It is outside the records' prefix, so no server of the zone ever reads it.
const DefaultLeaderPrefix = "/gatewaydns/leader"

// DefaultElectionTTL is how long a crashed leader keeps its leadership: a successor takes over
// at most this long after the leader's process is gone (at once when it shuts down cleanly).
const DefaultElectionTTL = 10 * time.Second

// ErrNotLeader is returned for a write by a writer that does not lead, or that led and was
// deposed: etcd rejected the transaction because its election key is gone.
var ErrNotLeader = errors.New("not the elected writer for this owner")

// Election elects one writer among the replicas of one owner.
type Election struct {
	client   *clientv3.Client
	prefix   string // the election's key prefix, <leader prefix>/<owner>
	identity string // the value a leader puts at its key: who it is, for people
	ttl      int    // session TTL in seconds
}

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
	}
}

// Prefix is the election's key prefix; the leader's key is below it.
func (e *Election) Prefix() string { return e.prefix }

// Campaign blocks until this replica leads, or ctx ends. Each call starts a new session (an etcd
// lease kept alive in the background); the Term ends when that session is lost.
func (e *Election) Campaign(ctx context.Context) (*Term, error) {
	s, err := concurrency.NewSession(e.client, concurrency.WithTTL(e.ttl))
	if err != nil {
		return nil, fmt.Errorf("election %s: session: %w", e.prefix, err)
	}
	el := concurrency.NewElection(s, e.prefix)
	if err := el.Campaign(ctx, e.identity); err != nil {
		closeSession(s)
		return nil, fmt.Errorf("election %s: campaign: %w", e.prefix, err)
	}
	return &Term{Key: el.Key(), Rev: el.Rev(), session: s, election: el}, nil
}

// Term is one period of leadership.
type Term struct {
	// Key is the leader's election key, Rev its create revision: the fence.
	Key string
	Rev int64

	session  *concurrency.Session
	election *concurrency.Election
}

// Fence is the condition every write of this term carries: the election key this term created
// still exists. Once the leader resigned, or its session expired, the key is gone (a
// successor's key has another create revision) and etcd rejects the transaction.
func (t *Term) Fence() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(t.Key), "=", t.Rev)
}

// Done is closed when the term's session is lost (its lease expired or was revoked, or the
// client closed). The term may have ended earlier: a write failing with ErrNotLeader says so.
func (t *Term) Done() <-chan struct{} { return t.session.Done() }

// Session is the term's etcd session.
func (t *Term) Session() *concurrency.Session { return t.session }

// Resign ends the term: it deletes the election key, so a successor takes over at once, and
// revokes the session's lease.
func (t *Term) Resign(ctx context.Context) error {
	err := t.election.Resign(ctx)
	closeSession(t.session)
	return err
}

func closeSession(s *concurrency.Session) {
	// Close revokes the lease, bounded by the TTL; an unreachable etcd lets it expire instead.
	_ = s.Close()
}
