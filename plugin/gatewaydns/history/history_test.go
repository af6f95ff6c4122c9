package history

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

const dir = "/skydns/test/zone/"

// TestTheValuesAtAPastRevisionAreReadFromEtcdsHistory runs a real etcd: the keys of a zone that
// changed after a revision are read back with the values they had at it (none for a key
// created since), whatever they went through after; keys outside the zone, and changes after
// the span's end, are not.
func TestTheValuesAtAPastRevisionAreReadFromEtcdsHistory(t *testing.T) {
	cli := testenv.StartEtcd(t).Client(t)
	put := func(key, value string) int64 {
		t.Helper()
		r, err := cli.Put(context.Background(), key, value)
		if err != nil {
			t.Fatal(err)
		}
		return r.Header.Revision
	}
	del := func(key string) int64 {
		t.Helper()
		r, err := cli.Delete(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		return r.Header.Revision
	}
	put(dir+"changed/1", `{"host":"10.0.0.1"}`)
	put(dir+"deleted/1", `{"host":"10.0.0.2"}`)
	put(dir+"same/1", `{"host":"10.0.0.3"}`)
	from := put(dir[:len(dir)-1], `{"host":"10.0.0.4"}`) // the zone's own key
	put(dir+"changed/1", `{"host":"10.0.1.1"}`)
	put(dir+"changed/1", `{"host":"10.0.2.1"}`)
	del(dir + "deleted/1")
	put(dir+"new/1", `{"host":"10.0.0.5"}`)
	put("/skydns/test/zonex/1", `{"host":"10.0.0.6"}`) // shares the prefix, not the zone
	put("/skydns/other/1", `{"host":"10.0.0.7"}`)
	put(dir[:len(dir)-1], `{"host":"10.0.1.4"}`)
	to := del(dir + "new/1")
	put(dir+"after/1", `{"host":"10.0.0.8"}`) // after the span
	put(dir+"same/1", `{"host":"10.0.1.3"}`)

	r := &Reader{Client: cli}
	past, err := r.Past(context.Background(), dir, from, to)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, kv := range past {
		got[k] = "none"
		if kv != nil {
			got[k] = string(kv.Value)
		}
	}
	want := map[string]string{
		dir + "changed/1": `{"host":"10.0.0.1"}`,
		dir + "deleted/1": `{"host":"10.0.0.2"}`,
		dir + "new/1":     "none",
		dir[:len(dir)-1]:  `{"host":"10.0.0.4"}`,
	}
	if !maps.Equal(got, want) {
		t.Errorf("past values %v, want %v", got, want)
	}
	if kv := past[dir+"changed/1"]; kv == nil || kv.Revision >= from || kv.Created == 0 {
		t.Errorf("changed/1 then: %+v, want its revision and creation before %d", kv, from)
	}

	// A span with no change of the zone ends on etcd's word that it sent every change.
	quiet, err := r.Past(context.Background(), "/skydns/test/quiet/", from, to)
	if err != nil || len(quiet) != 0 {
		t.Errorf("a zone that did not change: %v, %v", quiet, err)
	}
	if empty, err := r.Past(context.Background(), dir, to, to); err != nil || len(empty) != 0 {
		t.Errorf("an empty span: %v, %v", empty, err)
	}
}

// TestAHistoryPastItsBoundsOrCompactedIsNotRead: the caller sends the whole zone instead.
func TestAHistoryPastItsBoundsOrCompactedIsNotRead(t *testing.T) {
	cli := testenv.StartEtcd(t).Client(t)
	ctx := context.Background()
	var revs []int64
	for i := range 10 {
		r, err := cli.Put(ctx, fmt.Sprintf("%sname%d/1", dir, i), `{"host":"10.0.0.1"}`)
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, r.Header.Revision)
	}
	first, last := revs[0], revs[len(revs)-1]
	for _, tc := range []struct {
		name string
		r    *Reader
		want error
	}{
		{"more revisions since than the bound", &Reader{Client: cli, MaxRevisions: 5}, ErrTooLong},
		{"more keys changed than the bound", &Reader{Client: cli, MaxKeys: 3}, ErrTooLong},
		{"within both", &Reader{Client: cli, MaxRevisions: 10, MaxKeys: 9}, nil},
	} {
		_, err := tc.r.Past(ctx, dir, first, last)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := cli.Compact(ctx, revs[5]); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Reader{Client: cli}).Past(ctx, dir, first, last); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("a compacted span: %v, want %v", err, rpctypes.ErrCompacted)
	}
	past, err := (&Reader{Client: cli}).Past(ctx, dir, revs[5], last)
	if err != nil || !slices.Equal(slices.Sorted(maps.Keys(past)), []string{dir + "name6/1", dir + "name7/1", dir + "name8/1", dir + "name9/1"}) {
		t.Errorf("the span after the compaction: %v, %v", slices.Sorted(maps.Keys(past)), err)
	}
}
