package gatewaydns

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/prepacked"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// TestAChangeIsAnsweredWithNewBytesAtOnceUnderChurn: a writer changes names one after the
// other (a new address, a second record, a delete and a put back) while readers ask the same
// names as fast as they can, so that replies are packed and kept while writes race them (run
// with -race). The answer to the question asked right after a change returns holds the change,
// never a packed reply from before it; at the end every name answers its last value.
func TestAChangeIsAnsweredWithNewBytesAtOnceUnderChurn(t *testing.T) {
	const names, changes = 8, 400
	ix := index.New(index.Options{})
	key := func(n, rec int) string { return fmt.Sprintf("/skydns/test/zone/n%d/%d", n, rec) }
	var kvs []record.KV
	for n := range names {
		kvs = append(kvs, record.KV{Key: key(n, 0), Value: []byte(`{"host":"10.0.0.1"}`), Revision: 1, Created: 1})
	}
	ix.Load(ix.Root(), kvs)
	g := answering(ix, []string{"zone.test."})
	g.packer = prepacked.New("/skydns", g.Zones, g.packedRules(nil))
	g.packer.SetWrites(prepacked.WritesAll)
	remote := &net.UDPAddr{IP: net.IPv4(10, 1, 1, 1), Port: 4000}
	ask := func(n int, qtype uint16) *dns.Msg {
		r := new(dns.Msg)
		r.SetQuestion(fmt.Sprintf("n%d.zone.test.", n), qtype)
		out, _ := serveWire(t, g, r, remote)
		m := new(dns.Msg)
		if err := m.Unpack(out); err != nil {
			t.Errorf("n%d: %v", n, err)
		}
		return m
	}

	var stop atomic.Bool
	var packedReplies atomic.Int64
	var wg sync.WaitGroup
	for reader := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				r := new(dns.Msg)
				r.SetQuestion(fmt.Sprintf("n%d.zone.test.", (i+reader)%names), []uint16{dns.TypeA, dns.TypeAAAA}[i%2])
				if _, packed := serveWire(t, g, r, remote); packed {
					packedReplies.Add(1)
				}
			}
		})
	}
	want := make([]map[string]bool, names) // each name's addresses now
	held := map[string]string{}            // each key's address now
	for n := range want {
		want[n] = map[string]bool{"10.0.0.1": true}
		held[key(n, 0)] = "10.0.0.1"
	}
	rev := int64(1)
	for i := range changes {
		n := i % names
		rev++
		ip := fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)
		var c record.Change
		switch i % 4 {
		case 0, 1: // a new address for its record
			c = record.Change{KV: record.KV{Key: key(n, 0), Value: []byte(fmt.Sprintf(`{"host":%q}`, ip)), Revision: rev, Created: 1}}
		case 2: // a second record
			c = record.Change{KV: record.KV{Key: key(n, 1), Value: []byte(fmt.Sprintf(`{"host":%q}`, ip)), Revision: rev, Created: rev}}
		case 3: // the second record goes
			c = record.Change{KV: record.KV{Key: key(n, 1), Revision: rev}, Deleted: true}
		}
		delete(want[n], held[c.Key])
		delete(held, c.Key)
		if !c.Deleted {
			held[c.Key] = ip
			want[n][ip] = true
		}
		ix.Apply([]record.Change{c})
		if got := addresses(ask(n, dns.TypeA)); !sameSet(got, want[n]) {
			t.Fatalf("change %d: n%d answers %v right after the change, want %v", i, n, got, want[n])
		}
	}
	stop.Store(true)
	wg.Wait()
	for n := range names {
		if got := addresses(ask(n, dns.TypeA)); !sameSet(got, want[n]) {
			t.Errorf("n%d answers %v at the end, want %v", n, got, want[n])
		}
	}
	if packedReplies.Load() == 0 {
		t.Fatal("the readers were never answered packed: the test raced nothing")
	}
	t.Logf("%d changes; the readers got %d packed replies", changes, packedReplies.Load())
}

func addresses(m *dns.Msg) map[string]bool {
	out := map[string]bool{}
	for _, rr := range m.Answer {
		if a, ok := rr.(*dns.A); ok {
			out[a.A.String()] = true
		}
	}
	return out
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
