package index

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

func kv(key, value string) record.KV { return record.KV{Key: key, Value: []byte(value)} }

func query(name string, qtype uint16) request.Request {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	return request.Request{Req: m}
}

func keys(sx []msg.Service) []string {
	var out []string
	for _, s := range sx {
		out = append(out, s.Key)
	}
	return out
}

var fixture = []record.KV{
	kv("/skydns/test/zone/app/3e6bee2e", `{"host":"10.0.0.1"}`),
	kv("/skydns/test/zone/app/9a0c11f0", `{"host":"10.0.0.2"}`),
	kv("/skydns/test/zone/own", `{"host":"10.0.0.3"}`),
	kv("/skydns/test/zone/both", `{"host":"10.0.0.4"}`),
	kv("/skydns/test/zone/both/x", `{"host":"10.0.0.5"}`),
	kv("/skydns/test/zone/deep/a/b/c/d", `{"host":"10.0.0.6"}`),
	kv("/skydns/test/zone/txt/1", `{"text":"hello"}`),
	kv("/skydns/test/zone/txt/2", `{"host":"10.0.0.7"}`),
	kv("/skydns/test/zone/apps/*/k1", `{"host":"10.1.0.1"}`),
	kv("/skydns/test/zone/apps/real/k1", `{"host":"10.1.0.2"}`),
	kv("/skydns/test/zone/apps/ent/below/k1", `{"host":"10.1.0.3"}`),
	kv("/skydns/test/zone/r1/a/x", `{"host":"10.2.0.1"}`),
	kv("/skydns/test/zone/r2/a/x", `{"host":"10.2.0.2"}`),
	kv("/skydns/test/zone/r2/b/x", `{"host":"10.2.0.3"}`),
	// Byte order, not tree order: "b-c" sorts before "b/" as in an etcd range read.
	kv("/skydns/test/zone/order/b", `{"host":"10.3.0.1"}`),
	kv("/skydns/test/zone/order/b/c", `{"host":"10.3.0.2"}`),
	kv("/skydns/test/zone/order/b-c", `{"host":"10.3.0.3"}`),
}

func TestRecords(t *testing.T) {
	ix := New(Options{})
	ix.Load(ix.Root(), fixture)
	tests := []struct {
		name    string
		qname   string
		qtype   uint16
		exact   bool
		want    []string
		wantErr error
	}{
		{name: "subtree of a name holds its records one level down", qname: "app.zone.test", want: []string{"/skydns/test/zone/app/3e6bee2e", "/skydns/test/zone/app/9a0c11f0"}},
		{name: "a record at the name's own key answers when nothing is below", qname: "own.zone.test", want: []string{"/skydns/test/zone/own"}},
		{name: "records below hide the name's own key as an etcd prefix read does", qname: "both.zone.test", want: []string{"/skydns/test/zone/both/x"}},
		{name: "exact reads only the name's own key", qname: "both.zone.test", exact: true, want: []string{"/skydns/test/zone/both"}},
		{name: "exact read of a name with records only below is a name error", qname: "app.zone.test", exact: true, wantErr: ErrNotFound},
		{name: "subtree spans many levels", qname: "a.deep.zone.test", want: []string{"/skydns/test/zone/deep/a/b/c/d"}},
		{name: "unknown name is a name error", qname: "nope.zone.test", wantErr: ErrNotFound},
		{name: "empty non-terminal answers its subtree", qname: "b.a.deep.zone.test", want: []string{"/skydns/test/zone/deep/a/b/c/d"}},
		{name: "text-only records are left out of an A answer", qname: "txt.zone.test", qtype: dns.TypeA, want: []string{"/skydns/test/zone/txt/2"}},
		{name: "text-only records answer TXT", qname: "txt.zone.test", qtype: dns.TypeTXT, want: []string{"/skydns/test/zone/txt/1", "/skydns/test/zone/txt/2"}},
		{name: "query wildcard matches any label at its position", qname: "a.*.zone.test", want: []string{"/skydns/test/zone/deep/a/b/c/d", "/skydns/test/zone/r1/a/x", "/skydns/test/zone/r2/a/x"}},
		{name: "query wildcard any is the same as star", qname: "b.any.zone.test", want: []string{"/skydns/test/zone/order/b", "/skydns/test/zone/order/b/c", "/skydns/test/zone/r2/b/x"}},
		{name: "query wildcard under an unknown name is a name error", qname: "*.nope.zone.test", wantErr: ErrNotFound},
		{name: "stored wildcard answers a name that does not exist", qname: "foo.apps.zone.test", want: []string{"/skydns/test/zone/apps/*/k1"}},
		{name: "stored wildcard covers more than one label", qname: "a.b.apps.zone.test", want: []string{"/skydns/test/zone/apps/*/k1"}},
		{name: "stored wildcard does not shadow an existing name", qname: "real.apps.zone.test", want: []string{"/skydns/test/zone/apps/real/k1"}},
		{name: "stored wildcard does not cover an empty non-terminal", qname: "ent.apps.zone.test", want: []string{"/skydns/test/zone/apps/ent/below/k1"}},
		{name: "stored wildcard covers names below an empty non-terminal's missing child", qname: "x.ent.apps.zone.test", wantErr: ErrNotFound},
		{name: "stored wildcard answers exact reads too", qname: "foo.apps.zone.test", exact: true, wantErr: ErrNotFound},
		{name: "records come in etcd's byte order", qname: "order.zone.test", want: []string{"/skydns/test/zone/order/b", "/skydns/test/zone/order/b-c", "/skydns/test/zone/order/b/c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			qtype := tc.qtype
			if qtype == 0 {
				qtype = dns.TypeA
			}
			got, err := ix.Records(context.Background(), query(tc.qname, qtype), tc.exact)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if !slices.Equal(keys(got), tc.want) {
				t.Fatalf("got %v\nwant %v", keys(got), tc.want)
			}
		})
	}
}

func TestDefaultsApplied(t *testing.T) {
	ix := New(Options{})
	ix.Load(ix.Root(), []record.KV{kv("/skydns/test/a", `{"host":"10.0.0.1"}`), kv("/skydns/test/b", `{"host":"10.0.0.1","ttl":60,"priority":5}`)})
	a, _ := ix.Records(context.Background(), query("a.test", dns.TypeA), false)
	b, _ := ix.Records(context.Background(), query("b.test", dns.TypeA), false)
	if a[0].TTL != 300 || a[0].Priority != 10 {
		t.Errorf("defaults not applied: %+v", a[0])
	}
	if b[0].TTL != 60 || b[0].Priority != 5 {
		t.Errorf("explicit values changed: %+v", b[0])
	}
}

func TestApplyKeepsCachedAnswersCurrent(t *testing.T) {
	ix := New(Options{})
	ix.Load(ix.Root(), []record.KV{kv("/skydns/test/zone/app/1", `{"host":"10.0.0.1"}`)})
	ask := func(name string) []string {
		t.Helper()
		sx, err := ix.Records(context.Background(), query(name, dns.TypeA), false)
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		return keys(sx)
	}
	// Fill the caches at every level first.
	ask("app.zone.test")
	ask("zone.test")

	ix.Apply([]record.Change{{KV: kv("/skydns/test/zone/app/2", `{"host":"10.0.0.2"}`)}})
	if got := ask("app.zone.test"); !slices.Equal(got, []string{"/skydns/test/zone/app/1", "/skydns/test/zone/app/2"}) {
		t.Fatalf("after put: %v", got)
	}
	if got := ask("zone.test"); len(got) != 2 {
		t.Fatalf("parent's cached subtree not refreshed: %v", got)
	}
	ix.Apply([]record.Change{{KV: kv("/skydns/test/zone/app/1", `{"host":"10.9.9.9"}`)}})
	sx, _ := ix.Records(context.Background(), query("app.zone.test", dns.TypeA), false)
	if sx[0].Host != "10.9.9.9" {
		t.Fatalf("update not seen: %+v", sx[0])
	}
	ix.Apply([]record.Change{{KV: kv("/skydns/test/zone/app/1", ""), Deleted: true}, {KV: kv("/skydns/test/zone/app/2", ""), Deleted: true}})
	if got := ask("app.zone.test"); got != nil {
		t.Fatalf("after deletes: %v", got)
	}
	if ix.Len() != 0 {
		t.Fatalf("Len = %d after deleting everything", ix.Len())
	}
	if _, err := ix.Records(context.Background(), query("zone.test", dns.TypeA), false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("empty nodes were not pruned: err = %v", err)
	}
}

func TestDeletePrunesSoParentAnswersItsOwnKeyAgain(t *testing.T) {
	ix := New(Options{})
	ix.Load(ix.Root(), []record.KV{kv("/skydns/test/a", `{"host":"10.0.0.1"}`), kv("/skydns/test/a/b", `{"host":"10.0.0.2"}`)})
	ix.Apply([]record.Change{{KV: kv("/skydns/test/a/b", ""), Deleted: true}})
	sx, err := ix.Records(context.Background(), query("a.test", dns.TypeA), false)
	if err != nil || !slices.Equal(keys(sx), []string{"/skydns/test/a"}) {
		t.Fatalf("got %v, %v", keys(sx), err)
	}
}

func TestInvalidValuesAreSkippedAndReportedOncePerValue(t *testing.T) {
	var reported []string
	ix := New(Options{Invalid: func(key string, err error) { reported = append(reported, key) }})
	ix.Load(ix.Root(), []record.KV{kv("/skydns/test/good", `{"host":"10.0.0.1"}`), kv("/skydns/test/bad", `{"host":`)})
	if ix.Len() != 1 || !slices.Equal(reported, []string{"/skydns/test/bad"}) {
		t.Fatalf("len %d, reported %v", ix.Len(), reported)
	}
	ix.Load(ix.Root(), []record.KV{kv("/skydns/test/good", `{"host":"10.0.0.1"}`), kv("/skydns/test/bad", `{"host":`)})
	ix.Apply([]record.Change{{KV: kv("/skydns/test/bad", `{"host":`)}})
	if len(reported) != 2 {
		// A relist forgets what was reported; the identical put after it is not reported again.
		t.Fatalf("reported %v", reported)
	}
	ix.Apply([]record.Change{{KV: kv("/skydns/test/bad", `{"host":1}`)}})
	if len(reported) != 3 {
		t.Fatalf("a new bad value must be reported: %v", reported)
	}
	// A good value replacing a bad one answers; a bad value replacing a good one stops answering.
	ix.Apply([]record.Change{{KV: kv("/skydns/test/bad", `{"host":"10.0.0.2"}`)}, {KV: kv("/skydns/test/good", `[]`)}})
	if _, err := ix.Records(context.Background(), query("bad.test", dns.TypeA), false); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Records(context.Background(), query("good.test", dns.TypeA), false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a key whose value turned bad still answers: %v", err)
	}
}

func TestLeaseTTL(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	tests := []struct {
		name     string
		value    string
		leaseFor time.Duration // 0: lease unknown
		want     uint32
	}{
		{name: "unknown lease keeps the record ttl", value: `{"host":"10.0.0.1","ttl":60}`, want: 60},
		{name: "unknown lease and no ttl is the default", value: `{"host":"10.0.0.1"}`, want: 300},
		{name: "remaining life shorter than ttl wins", value: `{"host":"10.0.0.1","ttl":600}`, leaseFor: 100 * time.Second, want: 100},
		{name: "ttl shorter than remaining life wins", value: `{"host":"10.0.0.1","ttl":60}`, leaseFor: 100 * time.Second, want: 60},
		{name: "remaining life is clamped up to min-lease-ttl", value: `{"host":"10.0.0.1"}`, leaseFor: 5 * time.Second, want: 30},
		{name: "remaining life is clamped down to max-lease-ttl", value: `{"host":"10.0.0.1"}`, leaseFor: 100 * time.Hour, want: 86400},
		{name: "past its known expiry a lease gives at most min-lease-ttl", value: `{"host":"10.0.0.1","ttl":600}`, leaseFor: -time.Second, want: 30},
		{name: "past its known expiry without a ttl is min-lease-ttl", value: `{"host":"10.0.0.1"}`, leaseFor: -time.Hour, want: 30},
		{name: "past its known expiry a shorter record ttl still wins", value: `{"host":"10.0.0.1","ttl":12}`, leaseFor: -time.Second, want: 12},
		{name: "expiring this second counts as past expiry", value: `{"host":"10.0.0.1","ttl":600}`, leaseFor: 500 * time.Millisecond, want: 30},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ix := New(Options{Now: func() time.Time { return now }})
			ix.Load(ix.Root(), []record.KV{{Key: "/skydns/test/a/x", Value: []byte(tc.value), Lease: 7}, kv("/skydns/test/a/y", `{"host":"10.0.0.9","ttl":11}`)})
			if tc.leaseFor != 0 {
				ix.SetLeaseExpiry(7, now.Add(tc.leaseFor))
			}
			sx, err := ix.Records(context.Background(), query("a.test", dns.TypeA), false)
			if err != nil {
				t.Fatal(err)
			}
			if sx[0].TTL != tc.want {
				t.Fatalf("TTL = %d, want %d", sx[0].TTL, tc.want)
			}
			if sx[1].TTL != 11 {
				t.Fatalf("an unleased neighbour's TTL changed to %d", sx[1].TTL)
			}
		})
	}
}

func TestPathPrefixIsHonoured(t *testing.T) {
	ix := New(Options{Prefix: "/dns/custom/"})
	ix.Load(ix.Root(), []record.KV{kv("/dns/custom/test/a", `{"host":"10.0.0.1"}`), kv("/skydns/test/a", `{"host":"10.0.0.2"}`)})
	sx, err := ix.Records(context.Background(), query("a.test", dns.TypeA), false)
	if err != nil || len(sx) != 1 || sx[0].Host != "10.0.0.1" {
		t.Fatalf("got %+v, %v", sx, err)
	}
}

func TestExplainTellsWhereEachRecordCameFrom(t *testing.T) {
	seen := time.Unix(1_700_000_000, 0)
	ix := New(Options{Now: func() time.Time { return seen }})
	ix.Load(ix.Root(), []record.KV{
		{Key: "/skydns/test/zone/app/1", Value: []byte(`{"host":"10.0.0.1","owner":"eu1","sources":["HTTPRoute/shop/web"]}`), Revision: 7},
		{Key: "/skydns/test/zone/app/2", Value: []byte(`{"host":"10.0.0.2"}`), Revision: 9},
	})
	got, err := ix.Explain(context.Background(), query("app.zone.test", dns.TypeTXT))
	if err != nil {
		t.Fatal(err)
	}
	want := []Origin{
		{Key: "/skydns/test/zone/app/1", Host: "10.0.0.1", Owner: "eu1", Sources: []string{"HTTPRoute/shop/web"}, Revision: 7, Seen: seen},
		{Key: "/skydns/test/zone/app/2", Host: "10.0.0.2", Revision: 9, Seen: seen},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i].Key != want[i].Key || got[i].Host != want[i].Host || got[i].Owner != want[i].Owner || !slices.Equal(got[i].Sources, want[i].Sources) || got[i].Revision != want[i].Revision || !got[i].Seen.Equal(want[i].Seen) {
			t.Errorf("record %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := ix.Explain(context.Background(), query("nothere.zone.test", dns.TypeTXT)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown name: %v", err)
	}

	// A CNAME that the older addresses keep out of the answer is shown, and marked.
	ix.Apply([]record.Change{{KV: record.KV{Key: "/skydns/test/zone/app/3", Value: []byte(`{"host":"lb.example.net"}`), Revision: 12, Created: 12}}})
	got, err = ix.Explain(context.Background(), query("app.zone.test", dns.TypeTXT))
	if err != nil || len(got) != 3 {
		t.Fatalf("with a clash: %+v, %v", got, err)
	}
	for _, o := range got {
		if want := map[bool]string{true: "cname-rule", false: ""}[o.Host == "lb.example.net"]; o.LeftOut != want {
			t.Errorf("%s left out %q, want %q", o.Key, o.LeftOut, want)
		}
	}
}

func TestLoadPerPrefixReplacesOnlyItsSubtree(t *testing.T) {
	a, b := "/skydns/test/a/", "/skydns/test/b/"
	ix := New(Options{Prefixes: []string{a, b}})
	ix.Load(a, []record.KV{kv("/skydns/test/a/x/1", `{"host":"10.0.0.1"}`), kv("/skydns/test/a/y/1", `{"host":"10.0.0.2"}`), kv("/skydns/test/b/z/1", `{"host":"10.0.0.9"}`)})
	if ix.Loaded() {
		t.Fatal("loaded before every prefix was")
	}
	ix.Load(b, []record.KV{kv("/skydns/test/b/z/1", `{"host":"10.0.0.3"}`)})
	if !ix.Loaded() || ix.Len() != 3 {
		t.Fatalf("loaded %v, len %d", ix.Loaded(), ix.Len())
	}
	ask := func(name string) ([]string, error) {
		sx, err := ix.Records(context.Background(), query(name, dns.TypeA), false)
		var hosts []string
		for _, s := range sx {
			hosts = append(hosts, s.Host)
		}
		return hosts, err
	}
	if h, _ := ask("z.b.test"); !slices.Equal(h, []string{"10.0.0.3"}) {
		t.Fatalf("a key outside the loaded prefix was taken from its load: %v", h)
	}
	ask("test") // fill the cache of the parent of both prefixes
	ix.Load(a, []record.KV{kv("/skydns/test/a/x/1", `{"host":"10.0.0.5"}`)})
	if h, _ := ask("x.a.test"); !slices.Equal(h, []string{"10.0.0.5"}) {
		t.Fatalf("reload of a: %v", h)
	}
	if _, err := ask("y.a.test"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a key gone from a's reload still answers: %v", err)
	}
	if h, _ := ask("z.b.test"); !slices.Equal(h, []string{"10.0.0.3"}) {
		t.Fatalf("reload of a touched b: %v", h)
	}
	if h, _ := ask("test"); !slices.Equal(h, []string{"10.0.0.5", "10.0.0.3"}) {
		t.Fatalf("the parent's cached subtree is stale: %v", h)
	}
	if ix.Len() != 2 {
		t.Fatalf("len %d after reloading a with one key", ix.Len())
	}
	ix.Load(b, nil)
	if _, err := ask("b.test"); !errors.Is(err, ErrNotFound) || ix.Len() != 1 {
		t.Fatalf("an empty load must remove the prefix's subtree: %v, len %d", err, ix.Len())
	}
}

func TestLabelsAreTheElementsOfTheStockPath(t *testing.T) {
	for _, prefix := range []string{"skydns", "/dns/custom/"} {
		ix := New(Options{Prefix: prefix})
		for _, name := range []string{
			"app.eu1.openmcp.cluster.", "openmcp.cluster.", "cluster.", ".", "",
			"*.apps.zone.test.", "a.any.zone.test.", "_http._tcp.svc.zone.test.",
			`a\.b.zone.test.`, "a/b.zone.test.", "/.", "a..b.zone.test.", `\/.`,
			strings.Repeat("d.", 40) + "zone.test.",
		} {
			want := ix.elements(msg.Path(name, prefix) + "/")
			want = want[:max(len(want)-1, 0)]
			_, wantStar := msg.PathWithWildcard(name, prefix)
			got, star := ix.labels(nil, name)
			if !slices.Equal(got, want) || (star >= 0) != wantStar {
				t.Errorf("prefix %q, name %q: got %q (star %d), want %q (wildcard %v)", prefix, name, got, star, want, wantStar)
			}
		}
	}
}

func TestGroupIsMsgGroupWithoutItsWorkForServicesWithoutAGroup(t *testing.T) {
	plain := []msg.Service{{Host: "10.0.0.1", Key: "/skydns/test/a/1"}, {Host: "10.0.0.2", Key: "/skydns/test/a/b/2"}}
	grouped := []msg.Service{{Host: "10.0.0.1", Key: "/skydns/test/a/1", Group: "g"}, {Host: "10.0.0.2", Key: "/skydns/test/a/b/2", Group: "h"}, {Host: "10.0.0.3", Key: "/skydns/test/a/b/3"}}
	for _, sx := range [][]msg.Service{plain, grouped, nil} {
		if got, want := group(sx), msg.Group(sx); !slices.Equal(got, want) {
			t.Errorf("group(%v) = %v, msg.Group %v", sx, got, want)
		}
	}
	if n := testing.AllocsPerRun(10, func() { group(plain) }); n != 0 {
		t.Errorf("group allocates %.0f times for services without a group", n)
	}
}
