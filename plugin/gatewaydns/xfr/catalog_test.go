package xfr

import (
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/zonefixture"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/catalog"
)

// TestTheCatalogIsTransferredAndNotifiedLikeTheZones: an AXFR of the catalog is its records
// between two SOAs, an IXFR from its serial the SOA alone, from an older one the whole catalog;
// and its secondaries (the transfer stanza that matches its name) are NOTIFYed of it, as of the
// zone.
func TestTheCatalogIsTransferredAndNotifiedLikeTheZones(t *testing.T) {
	cat := catalog.New("catalog.invalid.", []string{"zone.test."})
	l := listenForNotifies(t)
	cfg := Config{Transfer: transferStanzas(t, "transfer zone.test catalog.invalid {\n to "+l.addr+"\n}")}
	g := loaded(t, stanza{catalog: cat, cfg: cfg}, zonefixture.Records)

	full := zonefixture.Transferred(t, g, "catalog.invalid.", 0)
	if want := append(slices.Clone(cat.Records()), cat.SOA()); !slices.EqualFunc(full, want, func(a, b dns.RR) bool { return a.String() == b.String() }) {
		t.Errorf("AXFR of the catalog: %v, want %v", full, want)
	}
	if current := zonefixture.Transferred(t, g, "catalog.invalid.", cat.Serial); len(current) != 1 {
		t.Errorf("IXFR from the catalog's serial: %v, want its SOA alone", current)
	}
	if older := zonefixture.Transferred(t, g, "catalog.invalid.", cat.Serial-1); len(older) != len(full) {
		t.Errorf("IXFR from an older serial: %d records, want the whole catalog's %d", len(older), len(full))
	}

	n := startNotifier(g.Transfers, "", "")
	t.Cleanup(n.stop)
	deadline := time.Now().Add(2 * time.Second)
	for {
		l.mu.Lock()
		zones := slices.Clone(l.zones)
		l.mu.Unlock()
		if slices.Contains(zones, "catalog.invalid.") && slices.Contains(zones, "zone.test.") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("NOTIFYs of %v within 2s, want the zone's and the catalog's", zones)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
