package writer_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// A name that a thousand routes share keeps a small value, and a route joining or leaving it
// writes nothing to etcd unless the answer or the listed sources change.
func TestWriterNameOfAThousandRoutesWritesOnlyWhenItsAnswerChanges(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	app := wtName("app")
	routes := make([]record.ObjectRef, 1000)
	for i := range routes {
		routes[i] = record.ObjectRef{Kind: "HTTPRoute", Namespace: "shop", Name: fmt.Sprintf("r%04d", i)}
	}
	ep := func(target string, sources []record.ObjectRef) record.Endpoint {
		return record.Endpoint{Name: app, Targets: []string{target}, TTL: 30, Sources: sources}
	}
	d := wtWant(ep("10.0.0.1", routes))
	w, _ := wtStart(t, cli, writer.Config{Owner: "c1", Desired: d})
	wtEventually(t, 10*time.Second, "published", wtHostsAre(t, cli, app, "c1=10.0.0.1"))
	key := record.Key("skydns", app, "c1", "10.0.0.1")
	kv := wtKeys(t, cli)[key]
	v, err := record.ParseValue(kv.Value)
	if err != nil || len(v.Sources) != record.MaxSources || v.SourceCount != 1000 || len(kv.Value) > 300 {
		t.Fatalf("value of %d bytes: %s (%v)", len(kv.Value), kv.Value, err)
	}

	for _, step := range []struct {
		what   string
		ep     record.Endpoint
		writes int
	}{
		{"a route joins", ep("10.0.0.1", append(slices.Clone(routes), record.ObjectRef{Kind: "HTTPRoute", Namespace: "shop", Name: "r9999"})), 0},
		{"a route beyond the listed ones leaves", ep("10.0.0.1", slices.Delete(slices.Clone(routes), 500, 501)), 0},
		{"a listed route leaves", ep("10.0.0.1", routes[1:]), 1},
		{"the address changes", ep("10.0.0.2", routes[1:]), 2},
	} {
		d.set(step.ep)
		res, err := w.Reconcile(wtCtx(t), []string{app})
		if err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		if got := res.Puts + res.Deletes; got != step.writes {
			t.Errorf("%s: %d puts and deletes, want %d", step.what, got, step.writes)
		}
	}
	wtEventually(t, 5*time.Second, "the new address", wtHostsAre(t, cli, app, "c1=10.0.0.2"))
}
