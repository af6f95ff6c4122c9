package plan

import (
	"reflect"
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// TestUnsyncedSourcesDoNotRewriteTheObjectsAValueLists: before the sources have synced, a
// writer that starts sees a name's objects as its caches fill; a value that answers as wanted
// is not rewritten for listing objects the writer has not seen yet, but a value that answers
// otherwise is. Once synced, the list is made right.
func TestUnsyncedSourcesDoNotRewriteTheObjectsAValueLists(t *testing.T) {
	route := func(n string) record.ObjectRef {
		return record.ObjectRef{Kind: "HTTPRoute", Namespace: "shop", Name: n}
	}
	both := ep(name, 60, "203.0.113.10")
	both.Sources = []record.ObjectRef{route("api"), route("web")}
	seen := both
	seen.Sources = []record.ObjectRef{route("web")} // the caches hold one of the two so far
	moved := ep(name, 60, "203.0.113.11")
	moved.Sources = seen.Sources
	held := []KV{own(both, "203.0.113.10", 5)}
	for _, tc := range []struct {
		name    string
		synced  bool
		desired record.Endpoint
		want    []string
	}{
		{"not synced, answers alike: kept", false, seen, nil},
		{"synced: the list made right", true, seen, []string{change(name, puts(key(me, name, "203.0.113.10")))}},
		{"not synced, another answer: written", false, moved,
			[]string{change(name, puts(key(me, name, "203.0.113.11")))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Make(Input{Prefix: "skydns", Owner: me, Synced: tc.synced, Names: []string{name},
				Desired: []record.Endpoint{tc.desired}, Current: held})
			if got := summarize(p).changes; !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("changes %q, want %q", got, tc.want)
			}
		})
	}
}
