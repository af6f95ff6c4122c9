package xfr

import (
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
)

// The catalog zone (RFC 9432, package catalog), when the stanza has one: transferred whole
// (it has a few records per member), NOTIFYed like the stanza's zones, to the secondaries of
// the transfer stanza that matches its name.

// isCatalog tells whether zone is the stanza's catalog.
func (t *Transfers) isCatalog(zone string) bool {
	return t.st.Catalog != nil && zone == t.st.Catalog.Name
}

// transferCatalog sends the catalog: the SOA alone to a secondary that holds its serial (or a
// newer one, from another replica), else the whole catalog between two SOAs.
func (t *Transfers) transferCatalog(serial uint32) (<-chan []dns.RR, error) {
	run, err := t.runs.begin()
	if err != nil {
		return nil, err
	}
	c := t.st.Catalog
	soa := c.SOA()
	if serial != 0 && !index.SerialAfter(c.Serial, serial) {
		return run.run(func(x *xfrRun) { x.send([]dns.RR{soa}) }), nil
	}
	return run.run(func(x *xfrRun) {
		if x.send(c.Records()) {
			x.send([]dns.RR{soa})
		}
	}), nil
}

// notified are the zones the stanza NOTIFYs: its own, and its catalog.
func (t *Transfers) notified() []string {
	if t.st.Catalog == nil {
		return t.st.Zones
	}
	return append(t.st.Zones[:len(t.st.Zones):len(t.st.Zones)], t.st.Catalog.Name)
}

// serialOf is zone's serial in b, ok false where b does not answer it yet (a bridge's).
func (t *Transfers) serialOf(b Records, zone string) (serial uint32, ok bool) {
	if t.isCatalog(zone) {
		return t.st.Catalog.Serial, true
	}
	if !b.Serves(zone) {
		return 0, false
	}
	return b.ZoneSerial(zone), true
}

// soaAt is the SOA a NOTIFY of zone at serial carries.
func (t *Transfers) soaAt(zone string, serial uint32) dns.RR {
	if t.isCatalog(zone) {
		return t.st.Catalog.SOA()
	}
	return t.st.Apex.SOAAt(zone, serial, t.st.NegativeTTL)
}
