package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/tcpproxy"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// connect is a role's client of endpoints (Connect), its Members run until the test ends.
func connect(t *testing.T, endpoints []string, log Logger) (*clientv3.Client, *Members) {
	t.Helper()
	client, m, err := Connect(Config{Endpoints: endpoints}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	runMembers(t, m)
	return client, m
}

// getOrSuspect is a role's request: a get, and after a failure a suspicion (the round it waits
// for follows the members) and one more try. It reports whether either answered.
func getOrSuspect(ctx context.Context, c *clientv3.Client, m *Members) bool {
	for try := range 2 {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.Get(rctx, "/members-follow")
		cancel()
		if err == nil {
			return true
		}
		if try == 0 {
			m.Suspect(ctx)
		}
	}
	return false
}

// The Corefile's endpoints are a seed: a member added to the cluster is used from the next
// round on (a suspicion here; every syncEvery in any case), and replacing every original member
// one by one (remove one, add one, three times) keeps the client working, on members it was
// never configured with; each new member's use is logged once.
func TestMembersFollowTheClusterAsEveryOriginalMemberIsReplaced(t *testing.T) {
	// Strict reconfiguration off: its 5 s wait after each member change tests etcd, not us.
	cluster := testenv.StartEtcdCluster(t, 3, testenv.WithEtcdArgs("--strict-reconfig-check=false"))
	seeds := cluster.Endpoints()
	log := &lines{}
	client, m := connect(t, seeds, log)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if !getOrSuspect(ctx, client, m) {
		t.Fatal("no answer with every member up")
	}

	for step := range 3 {
		old := cluster.Members[0]
		cluster.RemoveMember(t, old)
		added := cluster.AddMember(t)
		start := time.Now()
		if !getOrSuspect(ctx, client, m) {
			t.Fatalf("step %d: no answer after %s was removed and %s added", step+1, old.Name, added.Name)
		}
		m.Suspect(ctx)
		for !slices.Contains(m.Using(), added.ClientURL) || slices.Contains(m.Using(), old.ClientURL) {
			if time.Since(start) > 5*time.Second {
				t.Fatalf("step %d: using %v 5s after %s left and %s joined", step+1, m.Using(), old.Name, added.Name)
			}
			m.Suspect(ctx)
		}
		t.Logf("step %d: %s removed, %s added: using %v after %v", step+1, old.Name, added.Name, m.Using(), time.Since(start).Round(time.Millisecond))
	}
	got, want := m.Using(), cluster.Endpoints()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("with every original member replaced, using %v, want the new members %v", got, want)
	}
	for _, s := range seeds {
		if slices.Contains(client.Endpoints(), s) {
			t.Errorf("the client still uses the removed seed %s: %v", s, client.Endpoints())
		}
	}
	for i := range 10 {
		if !getOrSuspect(ctx, client, m) {
			t.Fatalf("get %d on the new members failed", i)
		}
	}
	for _, mem := range cluster.Members {
		if n := log.count("Using etcd member " + mem.ClientURL + ": the cluster lists it"); n != 1 {
			t.Errorf("logged the use of %s %d times, want once: %q", mem.Name, n, log.all)
		}
	}
}

// Members replaced one after the other, with no request failing to call for a round: once a
// round has seen the member list change, it is read every second, so each member added next is
// used within about a second (syncChanging and a round), not at the next syncEvery.
func TestAMemberAddedWhileTheMembersChangeIsUsedWithinASecondOrSo(t *testing.T) {
	cluster := testenv.StartEtcdCluster(t, 3, testenv.WithEtcdArgs("--strict-reconfig-check=false"))
	_, m := connect(t, cluster.Endpoints(), &lines{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m.Suspect(ctx) // a round that reads the members
	cluster.RemoveMember(t, cluster.Members[0])
	m.Suspect(ctx) // the round that sees them change
	for step := 1; step <= 3; step++ {
		added := cluster.AddMember(t)
		start := time.Now()
		for !slices.Contains(m.Using(), added.ClientURL) {
			if time.Since(start) > 2500*time.Millisecond {
				t.Fatalf("step %d: %s not used within 2.5s of its start: using %v", step, added.Name, m.Using())
			}
			time.Sleep(20 * time.Millisecond) // the pace of the looks
		}
		t.Logf("step %d: %s used %v after it started", step, added.Name, time.Since(start).Round(time.Millisecond))
		if step < 3 {
			cluster.RemoveMember(t, cluster.Members[0])
		}
	}
}

// Endpoints that name none of the members are a front (a load balancer, a proxy, here a TCP
// proxy before one member): the client goes through it, never around it, and says so once.
func TestAFrontBeforeEtcdIsUsedAsItIs(t *testing.T) {
	e := testenv.StartEtcd(t)
	front, err := tcpproxy.Start(strings.TrimPrefix(e.ClientURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { front.Close() })
	log := &lines{}
	client, m := connect(t, []string{"http://" + front.Addr}, log)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !getOrSuspect(ctx, client, m) {
		t.Fatal("no answer through the front")
	}
	for range 3 {
		m.Suspect(ctx)
	}
	if got := client.Endpoints(); !slices.Equal(got, []string{"http://" + front.Addr}) {
		t.Errorf("the client uses %v, want the front alone", got)
	}
	if n := log.count("none of its members' own URLs"); n != 1 {
		t.Errorf("said it uses the front as it is %d times, want once: %q", n, log.all)
	}
}

// The first member list read decides, once, whether the endpoints are a seed or a front, and
// the candidates then follow each list: a seed that is no member stays while it answers, a
// seed that neither is a member nor answers goes, and once the list is followed it is followed
// still when it names none of the seeds (every original member replaced). A front stays a
// front whatever a later list says, and says so once.
func TestTheFirstMemberListSaysWhetherTheEndpointsAreASeedOrAFront(t *testing.T) {
	type step struct {
		members  []string // the member list read
		answered []string // the endpoints that answered the round's status requests
		want     []string // the round's candidates after it
	}
	for _, tc := range []struct {
		name    string
		seeds   []string
		steps   []step
		follows bool
	}{{
		name:  "endpoints that name a member are a seed, and a load balancer among them stays while it answers",
		seeds: []string{"http://a", "http://lb"},
		steps: []step{
			{members: []string{"http://a", "http://b", "http://c"}, answered: []string{"http://a", "http://lb"},
				want: []string{"http://a", "http://lb", "http://b", "http://c"}},
			{members: []string{"http://a", "http://b", "http://c"}, answered: []string{"http://a", "http://b"},
				want: []string{"http://a", "http://b", "http://c"}},
		},
		follows: true,
	}, {
		name:  "a seed is followed still once every original member is replaced",
		seeds: []string{"http://a", "http://b", "http://c"},
		steps: []step{
			{members: []string{"http://a", "http://b", "http://c"}, answered: []string{"http://a"},
				want: []string{"http://a", "http://b", "http://c"}},
			{members: []string{"http://b", "http://c", "http://d"}, answered: []string{"http://b"},
				want: []string{"http://b", "http://c", "http://d"}},
			{members: []string{"http://d", "http://e", "http://f"}, answered: []string{"http://d"},
				want: []string{"http://d", "http://e", "http://f"}},
		},
		follows: true,
	}, {
		name:  "endpoints that name no member are a front, whatever a later list says",
		seeds: []string{"http://lb"},
		steps: []step{
			{members: []string{"http://a", "http://b"}, answered: []string{"http://lb"}, want: []string{"http://lb"}},
			{members: []string{"http://lb", "http://b"}, answered: []string{"http://lb"}, want: []string{"http://lb"}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			log := &lines{}
			m := NewMembers(nil, tc.seeds, log)
			candidates := tc.seeds
			for i, s := range tc.steps {
				if m.follows(s.members) {
					answered := map[string]struct{}{}
					for _, ep := range s.answered {
						answered[ep] = struct{}{}
					}
					candidates = m.follow(s.members, answered)
				}
				if !slices.Equal(candidates, s.want) {
					t.Errorf("list %d: candidates %v, want %v", i+1, candidates, s.want)
				}
			}
			if got := m.follows(nil); got != tc.follows {
				t.Errorf("follows the member list: %v, want %v", got, tc.follows)
			}
			fronts := 0
			if !tc.follows {
				fronts = 1
			}
			if n := log.count("none of its members' own URLs"); n != fronts {
				t.Errorf("said the endpoints are a front %d times, want %d: %q", n, fronts, log.all)
			}
		})
	}
}
