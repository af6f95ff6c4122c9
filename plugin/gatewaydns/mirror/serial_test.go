package mirror

import (
	"context"
	"testing"
	"time"
)

// rev writes one change and returns its revision.
func (e *env) write(t *testing.T, key, value string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if value == "" {
		resp, err := e.direct.Delete(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	resp, err := e.direct.Put(ctx, key, value)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// A server that loads after a delete must end at the serial of one that saw the delete come:
// the delete's revision, which no live key carries, and not the load's revision, which a
// write outside the zone moved on.
func TestSerialIsTheLastChangeUnderThePrefixWhetherFollowedOrLoaded(t *testing.T) {
	e := newEnv(t)
	follower := newIndex()
	e.start(t, follower, follower, quick)
	e.write(t, prefix+"a/1", `{"host":"10.0.0.1"}`)
	e.write(t, prefix+"b/1", `{"host":"10.0.0.2"}`)
	deleted := e.write(t, prefix+"b/1", "")
	outside := e.write(t, "/skydns/other/x", `{"host":"10.0.0.3"}`)
	if outside <= deleted {
		t.Fatalf("outside write at %d, delete at %d", outside, deleted)
	}
	waitFor(t, 5*time.Second, "the delete followed", func() bool { return follower.Revision("test.") == deleted })

	loader := newIndex()
	e.start(t, loader, loader, quick)
	waitFor(t, 5*time.Second, "the delete replayed after the load", func() bool { return loader.Revision("test.") == deleted })
	if got := follower.Revision("test."); got != deleted {
		t.Fatalf("follower serial moved to %d by a write outside its prefix", got)
	}

	put := e.write(t, prefix+"c/1", `{"host":"10.0.0.4"}`)
	for name, ix := range map[string]interface{ Revision(string) int64 }{"follower": follower, "loader": loader} {
		waitFor(t, 5*time.Second, name+" at the new put", func() bool { return ix.Revision("x.test.") == put })
	}
}

// With the history after the newest key compacted away, the deletes in it cannot be found:
// the serial of a replica that loads then is the load's revision, never one before a change
// the index holds, and it differs from that of a replica that followed the delete. Their data
// cannot differ: both hold etcd's keys under the prefix at the same mod revisions (the same
// Digest), and the next change's revision is after both serials, which both then serve.
func TestAfterACompactionReplicasDifferInSerialOnlyUntilTheNextChange(t *testing.T) {
	e := newEnv(t)
	follower := newIndex()
	e.start(t, follower, follower, quick)
	e.write(t, prefix+"a/1", `{"host":"10.0.0.1"}`)
	e.write(t, prefix+"b/1", `{"host":"10.0.0.2"}`)
	deleted := e.write(t, prefix+"b/1", "")
	last := e.write(t, "/skydns/other/x", `{"host":"10.0.0.3"}`)
	waitFor(t, 5*time.Second, "the delete followed", func() bool { return follower.Revision("test.") == deleted })
	if _, err := e.direct.Compact(context.Background(), last); err != nil {
		t.Fatal(err)
	}
	loader := newIndex()
	e.start(t, loader, loader, quick)
	waitFor(t, 5*time.Second, "the load's revision as serial", func() bool { return loader.Revision("test.") == last })
	if got := follower.Revision("test."); got != deleted {
		t.Fatalf("follower serial %d, want the delete's %d", got, deleted)
	}
	fd, fok := follower.Digest(prefix)
	ld, lok := loader.Digest(prefix)
	if !fok || !lok || fd != ld || fd.Keys != 1 {
		t.Errorf("the replicas hold different keys: follower %+v, loader %+v", fd, ld)
	}

	put := e.write(t, prefix+"c/1", `{"host":"10.0.0.4"}`)
	if put <= last {
		t.Fatalf("the next change at %d, not after the load's %d", put, last)
	}
	for name, ix := range map[string]interface{ Revision(string) int64 }{"follower": follower, "loader": loader} {
		waitFor(t, 5*time.Second, name+" at the next change", func() bool { return ix.Revision("test.") == put })
	}
}
