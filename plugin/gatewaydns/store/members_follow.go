package store

import (
	"context"
	"slices"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// Following the cluster's member list: the configured endpoints are a seed (or a front), and
// the members the cluster lists are the candidates of a round (members.go).

// followList is the candidates of a round once the cluster said who its members are, when the
// endpoints are a seed (follows): the seeds that are members or answered, then the other
// members; those not asked yet are asked now and added to answered when they answer, so that a
// member new to the cluster is used at once. With a front, or when no member said, the
// candidates stay as they are.
func (m *Members) followList(ctx context.Context, candidates []string, answered map[string]struct{}) []string {
	if following(m.following.Load()) == followNot {
		return candidates
	}
	urls, ok := m.memberURLs(ctx, answeredFirst(candidates, answered))
	if !ok || !m.follows(urls) {
		return candidates
	}
	m.mu.Lock()
	if now := sorted(urls); !slices.Equal(now, m.members) {
		if m.members != nil {
			m.changed = time.Now()
			select { // followMembers reads it again soon
			case m.relist <- struct{}{}:
			default:
			}
		}
		m.members = now
	}
	m.mu.Unlock()
	next := m.follow(urls, answered)
	var fresh []string // members not asked yet: used at once if they answer
	for _, ep := range next {
		if !slices.Contains(candidates, ep) {
			fresh = append(fresh, ep)
		}
	}
	for ep := range m.probe(ctx, fresh) {
		answered[ep] = struct{}{}
	}
	return next
}

// followMembers reads the member list through the client every syncEvery (every syncChanging
// for changingFor after a round found it changed: a member removed is most often one of a few
// replaced one after the other, and the next is added within seconds) and calls for a round
// when its URLs are others than at the last round (or no round read them yet). A member list
// that cannot be read changes nothing: the requests that fail call for a round themselves. Off
// Run's goroutine: a read that waits on a frozen member must not hold up a suspicion's round.
func (m *Members) followMembers(ctx context.Context) {
	t := time.NewTimer(syncEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.relist:
			t.Reset(syncChanging)
			continue
		case <-t.C:
		}
		lctx, cancel := context.WithTimeout(ctx, listTimeout)
		resp, err := m.client.MemberList(lctx)
		cancel()
		if err == nil && following(m.following.Load()) == followNot {
			return // the endpoints are a front: nothing to follow
		}
		m.mu.Lock()
		changed := err == nil && !slices.Equal(sorted(clientURLs(resp.Members)), m.members)
		next := syncEvery
		if time.Since(m.changed) < changingFor {
			next = syncChanging
		}
		m.mu.Unlock()
		if changed {
			m.poke()
		}
		t.Reset(next)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// clientURLs are the client URLs of the members that serve clients: started (named), and
// voting (a learner refuses most requests), as clientv3's Sync reads them.
func clientURLs(members []*pb.Member) []string {
	var urls []string
	for _, mem := range members {
		if mem.Name != "" && !mem.IsLearner {
			urls = append(urls, mem.ClientURLs...)
		}
	}
	return urls
}

// answeredFirst is the first of candidates that answered.
func answeredFirst(candidates []string, answered map[string]struct{}) string {
	for _, ep := range candidates {
		if _, ok := answered[ep]; ok {
			return ep
		}
	}
	return ""
}

// memberURLs asks the member at ep (one that just answered: not the client's round robin,
// which may pick the member that did not) for the cluster's members, and returns their
// clientURLs. ok is false when etcd did not say.
func (m *Members) memberURLs(ctx context.Context, ep string) (urls []string, ok bool) {
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	conn, err := m.client.Dial(ep)
	if err != nil {
		return nil, false
	}
	defer conn.Close()
	resp, err := pb.NewClusterClient(conn).MemberList(lctx, &pb.MemberListRequest{Linearizable: true})
	if err != nil {
		return nil, false
	}
	urls = clientURLs(resp.Members)
	return urls, len(urls) > 0
}

// Whether the member list is followed: decided at the first one read.
type following uint32

const (
	followUndecided following = iota
	followYes
	followNot
)

// follows decides, at the first member list read, whether to follow it: when the configured
// endpoints name a member, they are a seed; when they name none, they are a front (a load
// balancer, a proxy, a tunnel) that the operator put before etcd, which the clients must go
// through rather than around, and they are used as they are. Run's goroutine calls it.
func (m *Members) follows(urls []string) bool {
	if following(m.following.Load()) == followUndecided {
		decided := followNot
		if slices.ContainsFunc(m.seeds, func(s string) bool { return slices.Contains(urls, s) }) {
			decided = followYes
		} else {
			m.log.Infof("etcd endpoints %v are none of its members' own URLs %v (a load balancer or a proxy): using them as they are, not the member list", m.seeds, urls)
		}
		m.following.Store(uint32(decided))
	}
	return following(m.following.Load()) == followYes
}

// follow is the candidates once the cluster said its members are at urls: the seeds that are
// members or answered, then the other members, in the cluster's order.
func (m *Members) follow(urls []string, answered map[string]struct{}) []string {
	var next []string
	for _, s := range m.seeds {
		if _, ok := answered[s]; ok || slices.Contains(urls, s) {
			next = append(next, s)
		}
	}
	return union(next, urls)
}

// union is a followed by the elements of b it lacks, each once.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
