package xfr

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/gatewaydns/gatewaydns/internal/zonefixture"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// The keys the property test writes: every shape the zone's names take, so that a change
// turns names into records of their parents and back (a record id gaining a name below it),
// into empty non-terminals, into the apex's NS records and glue, and into the names the apex's
// glue shares.
var ixfrKeys = func() []string {
	keys := []string{"www", "ns1", "dns/ns/a", "dns/ns/b", "dns/apex/x1", "dns/apex/x2", "dns/apex/3e6bee2e", "dns/apex/sub/1", "dns/ns/c/ns1", "dns/ns/c/ns2", "x1"}
	for _, c := range []string{"c0", "c1"} {
		keys = append(keys, c)
		for _, app := range []string{"app", "api"} {
			base := c + "/" + app
			keys = append(keys, base, base+"/3e6bee2e", base+"/0a1b2c3d", base+"/x1", base+"/sub",
				base+"/3e6bee2e/deep", base+"/sub/1")
		}
	}
	return keys
}()

// ixfrValue is a value a writer could put: addresses, a host name (a CNAME), a port (an SRV),
// mail, text, with a TTL now and then; or one the index skips.
func ixfrValue(r *rand.Rand) string {
	ip := fmt.Sprintf("10.0.%d.%d", r.IntN(3), r.IntN(4))
	switch r.IntN(9) {
	case 0:
		return fmt.Sprintf(`{"host":"2001:db8::%d"}`, r.IntN(4))
	case 1:
		return fmt.Sprintf(`{"host":"target%d.example.net"}`, r.IntN(2))
	case 2:
		return fmt.Sprintf(`{"host":"www.zone.test","port":%d}`, 8443+r.IntN(2))
	case 3:
		return fmt.Sprintf(`{"host":"%s","port":443}`, ip)
	case 4:
		return fmt.Sprintf(`{"host":"mx%d.example.net","mail":true,"priority":10}`, r.IntN(2))
	case 5:
		return fmt.Sprintf(`{"text":"v=%d"}`, r.IntN(3))
	case 6:
		return fmt.Sprintf(`{"host":"%s","ttl":%d}`, ip, 60+r.IntN(2))
	case 7:
		return `{"host":` // skipped: a put that takes the key out
	case 8:
		if r.IntN(2) == 0 {
			return fmt.Sprintf(`{"host":"%s","targetstrip":1}`, ip)
		}
	}
	return fmt.Sprintf(`{"host":"%s"}`, ip)
}

// TestAnIXFRFromAnySerialTheJournalHoldsTurnsTheSecondarysCopyIntoTheZone: over random
// writes, deletes and reloads, a secondary holding the full transfer of any earlier serial that
// applies the IXFR from it holds exactly the full transfer of now; the IXFR is incremental from
// every serial since the last load, and the whole zone from one before it.
func TestAnIXFRFromAnySerialTheJournalHoldsTurnsTheSecondarysCopyIntoTheZone(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { ixfrProperty(t, seed, nil) })
	}
}

// TestAnIXFRFromBeforeALoadIsTheDifferenceWhereEtcdsHistoryHoldsIt is the same with etcd's
// history to read, compacted now and then: across loads (a restart, a rollout) the IXFR is
// incremental from every serial etcd has not compacted, and the whole zone from one it has.
func TestAnIXFRFromBeforeALoadIsTheDifferenceWhereEtcdsHistoryHoldsIt(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { ixfrProperty(t, seed, &etcdLog{}) })
	}
}

// ixfrProperty runs the property test of one seed; with log, the stanza reads etcd's history
// from it, and it is compacted now and then.
func ixfrProperty(t *testing.T, seed uint64, log *etcdLog) {
	r := rand.New(rand.NewPCG(seed, 26))
	apex := answer.NewApex()
	apex.Nameservers = []answer.Nameserver{{Name: "ns1.zone.test.", Glue: []net.IP{net.ParseIP("10.0.0.1")}}}
	st := stanza{apex: apex}
	if log != nil {
		st.history = log
	}
	g := loaded(t, st, nil)
	ix := g.ix
	live := map[string]record.KV{} // what etcd holds, for the reloads
	taken := map[uint32][]string{} // serial -> the full transfer then
	loadedAt := uint32(0)
	rev := int64(1)
	var written []string
	for step := range 120 {
		rev++
		switch {
		case step > 0 && r.IntN(40) == 0:
			kvs := make([]record.KV, 0, len(live))
			for _, kv := range live {
				kvs = append(kvs, kv)
			}
			ix.Load(g.prefix, kvs)
			ix.Replayed(g.prefix, rev) // a delete after the newest key
			loadedAt = uint32(rev)
		case log != nil && r.IntN(30) == 0:
			log.compacted = rev // the revisions before this one are gone
		default:
			ch := ixfrChanges(r, rev, live, log)
			for _, c := range ch {
				written = append(written, fmt.Sprintf("%d %s del=%v %s", c.Revision, c.Key, c.Deleted, c.Value))
			}
			ix.Apply(ch)
		}
		full := zonefixture.Transferred(t, g, "zone.test.", 0)
		serial := full[0].(*dns.SOA).Serial
		now := zoneText(full)
		taken[serial] = now
		serials := slices.Sorted(maps.Keys(taken))
		for range 6 {
			from := serials[r.IntN(len(serials))]
			if from == serial {
				continue
			}
			ixfr := zonefixture.Transferred(t, g, "zone.test.", from)
			got, incremental := applyIXFR(t, taken[from], ixfr)
			if !slices.Equal(got, now) {
				logIXFRFailure(t, g, from, written)
				t.Fatalf("step %d: the copy of serial %d after the IXFR to %d differs from the zone:\n got %v\nwant %v\nIXFR: %v",
					step, from, serial, got, now, ixfr)
			}
			// Serial 0 (the empty zone before any change) asks for an AXFR.
			want := from != 0 && (from >= loadedAt || log != nil && int64(from)+1 >= log.compacted)
			if incremental != want {
				t.Fatalf("step %d: the IXFR from %d (last load at %d) was incremental: %v, want %v", step, from, loadedAt, incremental, want)
			}
		}
	}
}

// etcdLog is etcd's history as the property test writes it: every change with the value it
// replaced, all revisions before compacted gone.
type etcdLog struct {
	changes   []journaled
	compacted int64
}

type journaled struct {
	rev  int64
	key  string
	prev *record.KV
}

// Past implements History as etcd's watch with previous values answers it.
func (l *etcdLog) Past(_ context.Context, dir string, from, to int64) (map[string]*record.KV, error) {
	if from+1 < l.compacted {
		return nil, rpctypes.ErrCompacted
	}
	past := map[string]*record.KV{}
	for _, c := range l.changes {
		if c.rev <= from || c.rev > to || c.key != strings.TrimSuffix(dir, "/") && !strings.HasPrefix(c.key, dir) {
			continue
		}
		if _, seen := past[c.key]; !seen {
			past[c.key] = c.prev
		}
	}
	return past, nil
}

// ixfrChanges are one to three changes of random keys at rev, as one transaction; live
// follows them, and log (when not nil) notes them.
func ixfrChanges(r *rand.Rand, rev int64, live map[string]record.KV, log *etcdLog) []record.Change {
	var changes []record.Change
	for range 1 + r.IntN(3) {
		key := "/skydns/test/zone/" + ixfrKeys[r.IntN(len(ixfrKeys))]
		if log != nil {
			var prev *record.KV
			if kv, ok := live[key]; ok {
				prev = &kv
			}
			log.changes = append(log.changes, journaled{rev, key, prev})
		}
		if _, ok := live[key]; ok && r.IntN(3) == 0 {
			changes = append(changes, record.Change{KV: record.KV{Key: key, Revision: rev}, Deleted: true})
			delete(live, key)
			continue
		}
		kv := zonefixture.At(rev, key, ixfrValue(r))
		if old, ok := live[key]; ok {
			kv.Created = old.Created
		}
		live[key] = kv
		changes = append(changes, record.Change{KV: kv})
	}
	return changes
}

// zoneText is the records of a full transfer between its SOAs, as sorted text.
func zoneText(rrs []dns.RR) []string {
	var text []string
	for _, rr := range rrs[1 : len(rrs)-1] {
		text = append(text, rr.String())
	}
	slices.Sort(text)
	return slices.Compact(text)
}

// applyIXFR is the copy old (sorted text) after the transfer rrs, as a secondary applies it
// (RFC 1995 4): incremental when rrs is a difference, otherwise rrs is the whole zone.
func applyIXFR(t *testing.T, old []string, rrs []dns.RR) (got []string, incremental bool) {
	t.Helper()
	if len(rrs) < 2 {
		t.Fatalf("a transfer of %d records: %v", len(rrs), rrs)
	}
	if _, ok := rrs[1].(*dns.SOA); !ok || len(rrs) == 2 {
		return zoneText(rrs), false
	}
	copyOf := map[string]bool{}
	for _, s := range old {
		copyOf[s] = true
	}
	adding := false
	for _, rr := range rrs[2 : len(rrs)-1] {
		if _, ok := rr.(*dns.SOA); ok {
			adding = true
			continue
		}
		s := rr.String()
		if !adding && !copyOf[s] {
			t.Errorf("the IXFR deletes %s, which the secondary's copy does not hold", s)
		}
		copyOf[s] = adding
	}
	for s, held := range copyOf {
		if held {
			got = append(got, s)
		}
	}
	slices.Sort(got)
	return got, true
}

// logIXFRFailure logs the changes made and the names the IXFR from serial was made of, as
// they were and are: what it takes to tell which name the difference missed.
func logIXFRFailure(t *testing.T, g *served, serial uint32, changes []string) {
	for _, c := range changes {
		t.Log(c)
	}
	past, now, _ := g.ix.ZoneDiff("zone.test.", serial, g.st.Apex.ZoneNames("zone.test."))
	for what, z := range map[string]*index.Zone{"then": past, "now": now} {
		for i := range z.Len() {
			t.Logf("%s: name %s (record id: %v)", what, z.Name(i), z.RecordID(i))
		}
		for _, rr := range g.zoneRRs(z, false) {
			t.Logf("%s: %s", what, rr)
		}
	}
}
