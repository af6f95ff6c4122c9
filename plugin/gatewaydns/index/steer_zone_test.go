package index

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// zoneHosts are the hosts a zone copy holds for name, sorted.
func zoneHosts(t *testing.T, z *Zone, name string) string {
	t.Helper()
	sx, err := z.Records(context.Background(), query(name, dns.TypeA), false)
	if err != nil {
		t.Fatalf("%s in the zone: %v", name, err)
	}
	var out []string
	for _, s := range sx {
		out = append(out, s.Host)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// TestTransfersHoldTheBestTierAndFollowAFailoverByIXFR: a zone copy holds the eligible owners of
// the best tier (a secondary can neither check nor draw); the health of an address moves the
// serial of the zone, and the difference since the serial before is the failover: the primary's
// address out, the standby's in. A zone without checked names keeps the revision as its serial.
func TestTransfersHoldTheBestTierAndFollowAFailoverByIXFR(t *testing.T) {
	now := time.Unix(steerClockEpoch+1000, 0)
	ix := New(Options{Now: func() time.Time { return now }, ZonePrefixes: []string{"/skydns/test/zone/", "/skydns/test/other/"}})
	ix.Load(ix.Root(), []record.KV{
		owned(1, "app.zone.test", "eu1", "10.0.1.1", `{"priority":1,"healthCheck":"tcp://:443"}`),
		owned(2, "app.zone.test", "us1", "10.0.2.1", `{"priority":2}`),
		owned(3, "w.zone.test", "eu1", "10.0.1.1", `{"weight":90}`),
		owned(4, "w.zone.test", "us1", "10.0.2.1", `{"weight":10}`),
		owned(5, "plain.other.test", "eu1", "10.0.1.1", ""),
	})
	if s := ix.ZoneSerial("other.test."); s != 5 {
		t.Fatalf("a zone without checked names: serial %d, want its revision 5", s)
	}
	before := ix.ZoneSerial("zone.test.")
	if before != 4+1000 {
		t.Fatalf("a zone with checked names: serial %d, want its revision plus the clock, %d", before, 4+1000)
	}
	z, _ := ix.Zone("zone.test.", nil)
	if got := zoneHosts(t, z, "app.zone.test."); got != "10.0.1.1" {
		t.Fatalf("the zone holds %s of app, want the primary alone", got)
	}
	if got := zoneHosts(t, z, "w.zone.test."); got != "10.0.1.1,10.0.2.1" {
		t.Fatalf("the zone holds %s of w, want both owners of the tier (no draw)", got)
	}

	ix.ApplyHealth([]HealthChange{down("10.0.1.1", true)})
	after := ix.ZoneSerial("zone.test.")
	if !SerialAfter(after, before) || ix.ZoneSerial("other.test.") != 5 {
		t.Fatalf("serials after a failover: %d (was %d), other %d", after, before, ix.ZoneSerial("other.test."))
	}
	past, cur, ok := ix.ZoneDiff("zone.test.", before, nil)
	if !ok {
		t.Fatal("no IXFR from the serial before the failover")
	}
	if p, c := zoneHosts(t, past, "app.zone.test."), zoneHosts(t, cur, "app.zone.test."); p != "10.0.1.1" || c != "10.0.2.1" {
		t.Fatalf("IXFR of app: %s then, %s now; want the primary then, the standby now", p, c)
	}
	if cur.Serial(query("zone.test.", dns.TypeSOA)) != after {
		t.Fatalf("the difference is at serial %d, want %d", cur.Serial(query("zone.test.", dns.TypeSOA)), after)
	}

	// A write after the failover: its serial is later still, and an IXFR from before the
	// failover holds both.
	ix.Apply([]record.Change{{KV: owned(6, "new.zone.test", "us1", "10.0.2.9", "")}})
	if s := ix.ZoneSerial("zone.test."); !SerialAfter(s, after) {
		t.Fatalf("serial %d after a write, was %d", s, after)
	}
	past, cur, ok = ix.ZoneDiff("zone.test.", before, nil)
	if !ok || zoneHosts(t, cur, "app.zone.test.") != "10.0.2.1" || zoneHosts(t, cur, "new.zone.test.") != "10.0.2.9" {
		t.Fatalf("IXFR from before the failover and the write: ok %v", ok)
	}
	if _, err := past.Records(context.Background(), query("new.zone.test.", dns.TypeA), false); err == nil {
		t.Fatal("the zone then held a name written since")
	}
}
