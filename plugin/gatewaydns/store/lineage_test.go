package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// answer is one answer a Lineage hears, in order: asked before the answers before it are
// heard when early is set (requests in flight together).
type answer struct {
	cluster, member uint64
	rev             int64
	linearizable    bool
	early           bool
	status          uint64   // a status answer's raft index, when not 0
	members         []uint64 // a member list's IDs, when set
}

func TestLineageTellsANewStoreOnlyWhereTheStoreCannotBeTheSame(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []answer
		want    uint64 // new stores found
	}{
		{"revisions that grow", []answer{{cluster: 1, rev: 10, linearizable: true}, {cluster: 1, rev: 12}, {cluster: 1, rev: 12, linearizable: true}}, 0},
		{"a linearizable answer below a revision heard before it was asked", []answer{{cluster: 1, rev: 103}, {cluster: 1, rev: 56, linearizable: true}}, 1},
		{"a linearizable answer asked before a later revision was heard", []answer{{cluster: 1, rev: 103}, {cluster: 1, rev: 101, linearizable: true, early: true}}, 0},
		{"a watch of a lagging member below", []answer{{cluster: 1, rev: 103, linearizable: true}, {cluster: 1, rev: 99}}, 0},
		{"a new cluster ID", []answer{{cluster: 1, rev: 10}, {cluster: 2, rev: 11}}, 1},
		{"an answer without a cluster ID", []answer{{cluster: 1, rev: 10}, {rev: 11}}, 0},
		{"a member's raft log back to its start", []answer{{cluster: 1, member: 7, status: 900}, {cluster: 1, member: 7, status: 5}}, 1},
		{"a restarted member before its first raft round", []answer{{cluster: 1, member: 7, status: 900}, {cluster: 1, member: 7}}, 0},
		{"a restarted member a raft round behind", []answer{{cluster: 1, member: 7, status: 900}, {cluster: 1, member: 7, status: 880}}, 0},
		{"another member's lower index", []answer{{cluster: 1, member: 7, status: 900}, {cluster: 1, member: 8, status: 5}}, 0},
		{"members replaced one by one", []answer{{cluster: 1, members: []uint64{1, 2, 3}}, {cluster: 1, members: []uint64{2, 3, 4}}, {cluster: 1, members: []uint64{3, 4, 5}}, {cluster: 1, members: []uint64{4, 5, 6}}}, 0},
		{"all members others at once", []answer{{cluster: 1, members: []uint64{1, 2, 3}}, {cluster: 1, members: []uint64{4, 5, 6}}}, 1},
		{"once new, what was heard of the old store is forgotten", []answer{{cluster: 1, rev: 103}, {cluster: 1, rev: 56, linearizable: true}, {cluster: 1, rev: 57, linearizable: true}, {cluster: 1, rev: 56}, {cluster: 1, rev: 58, linearizable: true}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &lines{}
			l := NewLineage(log)
			_, changed := l.Generation()
			var asked mark
			for _, a := range tc.answers {
				if !a.early {
					asked = l.mark()
				}
				h := &pb.ResponseHeader{ClusterId: a.cluster, MemberId: a.member, Revision: a.rev}
				switch {
				case a.status != 0 || a.member != 0:
					l.status(&pb.StatusResponse{Header: h, RaftIndex: a.status}, asked)
				case a.members != nil:
					var ms []*pb.Member
					for _, id := range a.members {
						ms = append(ms, &pb.Member{ID: id})
					}
					l.memberList(&pb.MemberListResponse{Header: h, Members: ms}, asked)
				default:
					l.heard(h, a.linearizable, asked)
				}
			}
			gen, _ := l.Generation()
			if gen != tc.want {
				t.Errorf("found %d new stores, want %d; logged %q", gen, tc.want, log.all)
			}
			select {
			case <-changed:
				if tc.want == 0 {
					t.Error("the channel of generation 0 closed without a new store")
				}
			default:
				if tc.want > 0 {
					t.Error("the channel of generation 0 did not close")
				}
			}
			if n := log.count("etcd is not the store it was"); uint64(n) != tc.want {
				t.Errorf("logged %d new stores, want %d: %q", n, tc.want, log.all)
			}
		})
	}
}

// A 3-member etcd under a client of Connect with its Members running: restored from a
// snapshot (plain, and with --bump-revision --mark-compacted), it is a new store, found within
// 2 s of etcd answering though the client asks nothing of its own; every member restarted on
// its data (SIGKILL) is not.
func TestARestoredEtcdIsANewStoreAndARestartedOneIsNot(t *testing.T) {
	cluster := testenv.StartEtcdCluster(t, 3)
	log := &lines{}
	client, m := connect(t, cluster.Endpoints(), log)
	lin := m.Lineage()
	plain := cluster.Client(t)
	put := func(n int) {
		t.Helper()
		for i := range n {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := plain.Put(ctx, fmt.Sprintf("/lineage/%d", i), "x")
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	// The client reads, and watches, as the roles do: what it heard is the old store's.
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	watches := NewWatches(client)
	defer watches.Close()
	events := watches.Watch(wctx, "/lineage/", clientv3.WithPrefix())
	go func() {
		for range events {
		}
	}()
	put(30)
	if _, err := client.Get(context.Background(), "/lineage/0"); err != nil {
		t.Fatal(err)
	}
	m.Suspect(context.Background()) // a round: the members' raft indexes are known

	gen, _ := lin.Generation()
	cluster.RestartAll(t)
	put(5)
	// What a restore is found by: a linearizable read, and a round of statuses.
	if _, err := client.Get(context.Background(), "/lineage/0"); err != nil {
		t.Fatal(err)
	}
	m.Suspect(context.Background())
	if now, _ := lin.Generation(); now != gen {
		t.Fatalf("every member restarted on its data: %d new stores found; logged %q", now-gen, log.all)
	}

	for _, bump := range []uint64{0, 1000} {
		snap := cluster.Snapshot(t)
		put(60)
		// A round as the periodic sync makes them: the members' raft indexes are known since
		// the writes (after the first restore the log was young, and would stay so otherwise).
		m.Suspect(context.Background())
		gen, changed := lin.Generation()
		cluster.Restore(t, snap, bump)
		answering := time.Now()
		select {
		case <-changed:
			t.Logf("restored (bump %d): found a new store %v after etcd answered", bump, time.Since(answering).Round(time.Millisecond))
		case <-time.After(2 * time.Second):
			t.Fatalf("restored (bump %d): no new store found within 2s of etcd answering; logged %q", bump, log.all)
		}
		if now, _ := lin.Generation(); now != gen+1 {
			t.Errorf("restored (bump %d): %d new stores found, want 1", bump, now-gen)
		}
	}
}
