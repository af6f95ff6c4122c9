package index

import (
	"fmt"
	"slices"
	"testing"

	"github.com/coredns/coredns/plugin/etcd/msg"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// at is a key created at revision rev (and last changed then).
func at(rev int64, key, value string) record.KV {
	return record.KV{Key: key, Value: []byte(value), Revision: rev, Created: rev}
}

// A clash is told once when it starts and once when it ends, through loads and watch changes.
func TestClashIsToldWhenItStartsAndWhenItEnds(t *testing.T) {
	var told []string
	ix := New(Options{Clash: func(name string, clash bool, names int) {
		told = append(told, fmt.Sprintf("%s %v %d", name, clash, names))
	}})
	clean := []record.KV{
		at(1, "/skydns/test/zone/app/1", `{"host":"10.0.0.1"}`),
		at(2, "/skydns/test/zone/same/1", `{"host":"lb.example.net"}`),
		at(3, "/skydns/test/zone/same/2", `{"host":"LB.example.net."}`), // one CNAME target, twice
	}
	clashing := append(slices.Clone(clean), at(4, "/skydns/test/zone/app/2", `{"host":"lb.example.net"}`))
	steps := []struct {
		what string
		do   func()
		want []string
	}{
		{"a load without a clash", func() { ix.Load(ix.Root(), clean) }, nil},
		{"a load with one", func() { ix.Load(ix.Root(), clashing) }, []string{"app.zone.test. true 1"}},
		{"the same load again", func() { ix.Load(ix.Root(), clashing) }, nil},
		{"the CNAME deleted", func() {
			ix.Apply([]record.Change{{KV: record.KV{Key: "/skydns/test/zone/app/2", Revision: 5}, Deleted: true}})
		}, []string{"app.zone.test. false 0"}},
		{"a second CNAME target put", func() {
			ix.Apply([]record.Change{{KV: at(6, "/skydns/test/zone/same/3", `{"host":"other.example.net"}`)}})
		}, []string{"same.zone.test. true 1"}},
		{"a load that no longer holds it", func() { ix.Load(ix.Root(), clean) }, []string{"same.zone.test. false 0"}},
	}
	for _, s := range steps {
		told = nil
		s.do()
		if !slices.Equal(told, s.want) {
			t.Fatalf("%s: told %q, want %q", s.what, told, s.want)
		}
	}
}

// A clash is a clash of the name whose own records clash: keys below a name that are names of
// their own (eu1/web, eu1/api, written by hand) are not records of eu1, whatever their kinds.
func TestClashCountsOnlyTheNamesOwnRecords(t *testing.T) {
	tests := []struct {
		name  string
		keys  []record.KV
		clash []string
	}{
		{"names of their own below a parent", []record.KV{
			at(1, "/skydns/test/zone/eu1/web", `{"host":"10.0.0.1"}`),
			at(2, "/skydns/test/zone/eu1/api", `{"host":"lb.example.net"}`),
		}, nil},
		{"writer record ids", []record.KV{
			at(1, "/skydns/test/zone/eu1/web/50ec20e1", `{"host":"10.0.0.1"}`),
			at(2, "/skydns/test/zone/eu1/web/0a1b2c3d", `{"host":"lb.example.net"}`),
		}, []string{"web.eu1.zone.test."}},
		{"the x1, x2 of CoreDNS's README", []record.KV{
			at(1, "/skydns/test/zone/eu1/x1", `{"host":"10.0.0.1"}`),
			at(2, "/skydns/test/zone/eu1/x2", `{"host":"lb.example.net"}`),
		}, []string{"eu1.zone.test."}},
		{"a record id beside a name of its own", []record.KV{
			at(1, "/skydns/test/zone/eu1/7", `{"host":"10.0.0.1"}`),
			at(2, "/skydns/test/zone/eu1/api", `{"host":"lb.example.net"}`),
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var clashing []string
			ix := New(Options{Clash: func(name string, clash bool, _ int) {
				if clash {
					clashing = append(clashing, name)
				}
			}})
			ix.Load(ix.Root(), tt.keys)
			if !slices.Equal(clashing, tt.clash) {
				t.Errorf("after a load: clashes %q, want %q", clashing, tt.clash)
			}
			clashing = nil
			ix.Load(ix.Root(), nil)
			for _, kv := range tt.keys {
				ix.Apply([]record.Change{{KV: kv}})
			}
			if !slices.Equal(clashing, tt.clash) {
				t.Errorf("after watch puts: clashes %q, want %q", clashing, tt.clash)
			}
		})
	}
}

// BenchmarkApplyCNAMERule is what ruling costs a set when it is made: nothing to rule for
// nearly all of them, a clash for the rare one.
func BenchmarkApplyCNAMERule(b *testing.B) {
	for _, tc := range []struct {
		name string
		sx   []msg.Service
	}{
		{"one address", []msg.Service{{Host: "10.0.0.1"}}},
		{"three addresses", []msg.Service{{Host: "10.0.0.1"}, {Host: "10.0.0.2"}, {Host: "2001:db8::1"}}},
		{"one CNAME", []msg.Service{{Host: "lb.example.net"}}},
		{"a clash", []msg.Service{{Host: "lb.example.net"}, {Host: "10.0.0.2"}, {Text: "v=1"}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			created := func(i int) int64 { return int64(10 - i) }
			b.ReportAllocs()
			for b.Loop() {
				s := &answerSet{services: tc.sx}
				s.applyCNAMERule(created)
			}
		})
	}
}
