package index

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

func TestExactNamesAnswerOwnKeyAndRecordIDChildrenOnly(t *testing.T) {
	ix := New(Options{ExactNames: true})
	ix.Load(ix.Root(), fixture)
	tests := []struct {
		qname string
		want  []string // keys; nil with notFound: NXDOMAIN; nil without: NODATA
		nx    bool
	}{
		{"app.zone.test.", []string{"/skydns/test/zone/app/3e6bee2e", "/skydns/test/zone/app/9a0c11f0"}, false},
		{"3e6bee2e.app.zone.test.", []string{"/skydns/test/zone/app/3e6bee2e"}, false},
		{"both.zone.test.", []string{"/skydns/test/zone/both", "/skydns/test/zone/both/x"}, false},
		// The subtree read's answer for these is every record below: not a name's own.
		{"deep.zone.test.", nil, false},
		{"r2.zone.test.", nil, false},
		{"order.zone.test.", []string{"/skydns/test/zone/order/b-c"}, false},
		{"b.order.zone.test.", []string{"/skydns/test/zone/order/b", "/skydns/test/zone/order/b/c"}, false},
		{"nothere.zone.test.", nil, true},
		// A stored "*" is an RFC 4592 wildcard; a "*" or "any" in the question is a plain label.
		{"other.apps.zone.test.", []string{"/skydns/test/zone/apps/*/k1"}, false},
		{"ent.apps.zone.test.", nil, false},
		{"*.apps.zone.test.", []string{"/skydns/test/zone/apps/*/k1"}, false},
		{"any.r2.zone.test.", nil, true},
	}
	for _, tt := range tests {
		sx, err := ix.Records(context.Background(), query(tt.qname, dns.TypeA), false)
		if tt.nx != errors.Is(err, ErrNotFound) || (!tt.nx && err != nil) {
			t.Errorf("%s: error %v, want NXDOMAIN %t", tt.qname, err, tt.nx)
			continue
		}
		if got := keys(sx); !slices.Equal(got, tt.want) {
			t.Errorf("%s: keys %v, want %v", tt.qname, got, tt.want)
		}
	}
	addrs, ok, err := ix.Addresses("deep.zone.test.", dns.TypeA)
	if !ok || err != nil || len(addrs) != 0 {
		t.Errorf("deep.zone.test. addresses %v %t %v, want none (NODATA)", addrs, ok, err)
	}
}

func TestZoneHoldsEveryNameWithItsExactRecordsWhateverTheIndexAnswers(t *testing.T) {
	ix := New(Options{}) // subtree reads: the zone still holds exact names
	ix.Load(ix.Root(), fixture)
	z, ok := ix.Zone("zone.test.", nil)
	if !ok {
		t.Fatal("no zone after a load")
	}
	var names []string
	for n := range z.Names {
		names = append(names, n)
	}
	if names[0] != "zone.test." || len(names) != z.Len() {
		t.Fatalf("names %v: want the origin first", names)
	}
	for _, want := range []string{"app.zone.test.", "3e6bee2e.app.zone.test.", "*.apps.zone.test.", "d.c.b.a.deep.zone.test.", "deep.zone.test."} {
		if !slices.Contains(names, want) {
			t.Errorf("zone lacks %s: %v", want, names)
		}
	}
	sx, err := z.Records(context.Background(), query("deep.zone.test.", dns.TypeA), false)
	if err != nil || len(sx) != 0 {
		t.Errorf("deep.zone.test. in the zone: %v %v, want an empty non-terminal", keys(sx), err)
	}
	sx, _ = z.Records(context.Background(), query("app.zone.test.", dns.TypeA), false)
	if len(sx) != 2 {
		t.Errorf("app.zone.test. in the zone: %v", keys(sx))
	}
	// A later change does not reach a zone already copied.
	ix.Load(ix.Root(), fixture[:1])
	if _, err := z.Records(context.Background(), query("own.zone.test.", dns.TypeA), false); err != nil {
		t.Errorf("the copy changed with the index: %v", err)
	}
}

// A zone copied in chunks is the zone at one revision: the same names and entries as a copy
// in one lock, and a write between two chunks starts the copy over.
func TestZoneCopiedInChunksIsTheZoneAtOneRevision(t *testing.T) {
	ix := New(Options{})
	var kvs []record.KV
	for i := range 3 * zoneChunk {
		kvs = append(kvs, record.KV{Key: fmt.Sprintf("/skydns/test/zone/n%d/1", i), Value: []byte(`{"host":"10.0.0.1"}`), Revision: int64(i + 1), Created: int64(i + 1)})
	}
	ix.Load(ix.Root(), kvs)
	names := func(z *Zone) map[string]int {
		m := map[string]int{}
		for _, zn := range z.names {
			m[zn.name] = int(zn.end - zn.first)
		}
		return m
	}
	whole, _ := ix.Zone("zone.test.", nil)
	pauses := 0
	chunked, _ := ix.Zone("zone.test.", func() { pauses++ })
	if pauses < 2 || !maps.Equal(names(whole), names(chunked)) || chunked.Revision != whole.Revision {
		t.Fatalf("%d pauses; chunked copy %d names at %d, in one lock %d at %d", pauses, len(chunked.names), chunked.Revision, len(whole.names), whole.Revision)
	}
	if chunked.names[0].name != "zone.test." {
		t.Errorf("the first name is %s, want the origin", chunked.names[0].name)
	}
	// A write in the first pause: the copy starts over and holds it.
	written := false
	z, _ := ix.Zone("zone.test.", func() {
		if !written {
			written = true
			ix.Apply([]record.Change{{KV: record.KV{Key: "/skydns/test/zone/late/1", Value: []byte(`{"host":"10.0.0.2"}`), Revision: 9999, Created: 9999}}})
		}
	})
	if got := names(z); got["late.zone.test."] != 1 || len(got) != len(names(whole))+2 || z.Revision != 9999 {
		t.Errorf("after a write in a pause: late.zone.test. %d entries, %d names (want %d), revision %d", got["late.zone.test."], len(got), len(names(whole))+2, z.Revision)
	}
	// Writes in every pause: the last try takes the copy in one lock.
	rev := int64(10000)
	z, _ = ix.Zone("zone.test.", func() {
		rev++
		ix.Apply([]record.Change{{KV: record.KV{Key: "/skydns/test/zone/late/1", Value: []byte(`{"host":"10.0.0.2"}`), Revision: rev, Created: 9999}}})
	})
	if z.Revision != rev {
		t.Errorf("revision %d, want %d, the last write's", z.Revision, rev)
	}
}
