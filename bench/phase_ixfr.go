package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/promtext"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
)

// iResults: phase I, the size of an IXFR after a change of one record, by zone size.
type iResults struct {
	rows     []iRow
	restarts *iRestarts // across restarts (phase_ixfr_restarts.go); nil when not run
}

type iRow struct {
	names, records int           // of the dataset: the names the transfer must hold, the keys in etcd
	load, ready    time.Duration // writing the records into etcd; the server's start to ready
	axfr           xfer          // the first AXFR, at serial from
	from, to       uint32        // the serials before and after the change
	change         string        // what was changed, for the report
	applied        time.Duration // from the etcd write to the new serial on the primary
	ixfr           xfer          // the IXFR from `from`
	incremental    bool          // the answer was a difference (RFC 1995), not the whole zone
	soas, moved    int           // SOA records in the IXFR; the others
	movedRRs       []string      // the first few of the others, as text
	added          bool          // the changed record is among them
	kinds          map[string]float64
}

// movedShown is how many of the records an IXFR moved the report lists.
const movedShown = 12

// ixfrLimit is issue 26's bound on the records an IXFR of a one-record change moves, SOAs aside.
const ixfrLimit = 10

// recordsForNames is the record count of a dataset (benchdata.New) with at least names names:
// 37 names for 40 records (a subtree name has 4).
func recordsForNames(names int) int { return (names*40 + 36) / 37 }

// phaseI: IXFR at scale. For each of -inames, gatewaydns with a dataset of that many names
// under its own prefix (`path /benchiN`) and `transfer { to * }`; one AXFR, checked complete
// (its serial is S); then one record changes in etcd (an A record gets another address), and once
// the primary answers a newer serial, an IXFR from S: the records it moves, its bytes and its
// time, against the AXFR's. Nobody queries the server meanwhile, so the transfers are not paced.
func (h *harness) phaseI() error {
	h.res.i = &iResults{}
	for _, names := range h.opt.inames {
		row, err := h.ixfrAt(names)
		if row != nil {
			h.res.i.rows = append(h.res.i.rows, *row)
		}
		if err != nil {
			return err
		}
	}
	if h.opt.rnames <= 0 {
		return nil
	}
	r, err := h.ixfrAcrossRestarts(h.opt.rnames)
	h.res.i.restarts = r
	return err
}

func (h *harness) ixfrAt(names int) (*iRow, error) {
	path := fmt.Sprintf("benchi%d", names)
	d, loaded, err := h.loadDataset(path, recordsForNames(names))
	if err != nil {
		return nil, err
	}
	defer func() {
		ctx, cancel := h.ctx()
		defer cancel()
		if err := clearPrefix(ctx, h.cli, "/"+path+"/"); err != nil {
			logf("I: %v", err)
		}
	}()
	want := datasetNames(d)
	row := &iRow{names: len(want), records: len(d.Records), load: loaded}
	logf("I: %d records (%d names) in etcd in %v", row.records, row.names, loaded.Round(time.Millisecond))

	body := fmt.Sprintf("transfer {\n    to *\n}\ngatewaydns {\n    endpoint %s\n    path /%s\n}", h.etcd.ClientURL, path)
	srv, ready, err := h.start(serverSpec{name: fmt.Sprintf("gatewaydns-ixfr-%d", names), cpu: h.serverCPU, body: body, metrics: true}, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	row.ready = ready
	logf("I: gatewaydns on %s, ready in %v (log %s)", srv.DNS, ready.Round(time.Millisecond), srv.Log)

	client := &dns.Client{Net: "udp", Timeout: 500 * time.Millisecond}
	if row.from, err = soaSerial(client, srv.DNS); err != nil {
		return nil, srv.failure(err)
	}
	if row.axfr, err = axfr(srv.DNS, zone, want); err != nil {
		return nil, srv.failure(fmt.Errorf("AXFR: %w", err))
	}
	logf("I: AXFR at serial %d: %d records, %.1f MB in %d messages, %v", row.from, row.axfr.records, mb(row.axfr.bytes), row.axfr.messages, row.axfr.took.Round(time.Millisecond))
	// The journal keeps the zone as that transfer sent it; a change in between would make the
	// AXFR's serial a newer one than asked for above.
	if now, err := soaSerial(client, srv.DNS); err != nil || now != row.from {
		return nil, fmt.Errorf("the serial moved during the AXFR (%d, then %d: %v): something else writes to the zone", row.from, now, err)
	}
	before, err := promtext.Scrape(nil, srv.metricsURL)
	if err != nil {
		return nil, srv.failure(err)
	}

	// One change: the first A name gets an address outside the dataset's 10.0.0.0/8.
	rec, name, ip := d.Records[0], d.A[0], "192.0.2.1"
	row.change = fmt.Sprintf("%s A %s -> %s", name, ipv4(0), ip)
	ctx, cancel := h.ctx()
	defer cancel()
	changed := time.Now()
	if _, err := h.cli.Put(ctx, rec.Key, strings.Replace(rec.Value, ipv4(0), ip, 1)); err != nil {
		return nil, fmt.Errorf("etcd: changing %s: %w", rec.Key, err)
	}
	for {
		s, err := soaSerial(client, srv.DNS)
		if err == nil && index.SerialAfter(s, row.from) {
			row.to, row.applied = s, time.Since(changed)
			break
		}
		if time.Since(changed) > time.Minute {
			return nil, srv.failure(fmt.Errorf("the serial did not move from %d within a minute of the change (%v)", row.from, err))
		}
		time.Sleep(2 * time.Millisecond)
	}
	logf("I: %s; serial %d within %v", row.change, row.to, row.applied.Round(time.Millisecond))

	if err := ixfrFrom(srv.DNS, row, name, ip); err != nil {
		return row, srv.failure(fmt.Errorf("IXFR from %d: %w", row.from, err))
	}
	after, err := promtext.Scrape(nil, srv.metricsURL)
	if err != nil {
		return row, srv.failure(err)
	}
	row.kinds = map[string]float64{}
	for _, kind := range transferKinds {
		b, _ := promtext.Sum(before, `coredns_gatewaydns_transfers_total{kind="`+kind+`"}`)
		a, _ := promtext.Sum(after, `coredns_gatewaydns_transfers_total{kind="`+kind+`"}`)
		if a > b {
			row.kinds[kind] = a - b
		}
	}
	logf("I: IXFR from %d: %d records (%d SOAs), %.1f MB in %d messages, %v; incremental %v (server: %s); the AXFR: %d records, %.1f MB",
		row.from, row.ixfr.records, row.soas, mb(row.ixfr.bytes), row.ixfr.messages, row.ixfr.took.Round(time.Millisecond), row.incremental,
		kindsString(row.kinds), row.axfr.records, mb(row.axfr.bytes))
	return row, nil
}

// ixfrFrom asks server for an IXFR from row.from and reads its shape: an incremental answer
// (RFC 1995 4) is the new SOA, the old SOA, the records deleted, the new SOA, the records
// added, the new SOA; an AXFR-style one has a non-SOA record second.
func ixfrFrom(server string, row *iRow, name, ip string) error {
	m := new(dns.Msg)
	m.SetIxfr(dns.Fqdn(zone), row.from, "ns.dns."+dns.Fqdn(zone), "hostmaster."+dns.Fqdn(zone))
	row.ixfr.types = map[string]int{}
	var second dns.RR
	seen := map[string]bool{}
	wire, err := xfrIn(server, m, func(rr dns.RR) {
		row.ixfr.records++
		if row.ixfr.records == 2 {
			second = rr
		}
		row.ixfr.types[dns.TypeToString[rr.Header().Rrtype]]++
		seen[strings.ToLower(rr.Header().Name)] = true
		if _, ok := rr.(*dns.SOA); ok {
			row.soas++
			return
		}
		row.moved++
		if len(row.movedRRs) < movedShown {
			row.movedRRs = append(row.movedRRs, strings.ReplaceAll(rr.String(), "\t", " "))
		}
		if a, ok := rr.(*dns.A); ok && strings.EqualFold(a.Hdr.Name, dns.Fqdn(name)) && a.A.String() == ip {
			row.added = true
		}
	})
	row.ixfr.took, row.ixfr.messages, row.ixfr.bytes, row.ixfr.names = wire.took, wire.messages, wire.bytes, len(seen)
	if err != nil {
		return err
	}
	if soa, ok := second.(*dns.SOA); ok && soa.Serial == row.from {
		row.incremental = true
	}
	if !row.added {
		return fmt.Errorf("the IXFR (%d records) does not hold %s A %s", row.ixfr.records, name, ip)
	}
	return nil
}

// datasetNames is the owner names a transfer of d must hold, lower case and fully qualified.
func datasetNames(d *dataset) map[string]bool {
	want := map[string]bool{}
	for _, names := range [][]string{d.A, d.AAAA, d.CNAME, d.SRV, d.Subtree} {
		for _, name := range names {
			want[strings.ToLower(dns.Fqdn(name))] = true
		}
	}
	return want
}

// transferKinds are the kinds coredns_gatewaydns_transfers_total counts (package xfr).
var transferKinds = []string{"incremental", "history", "full", "current", "busy"}

// kindsString is "full 1, incremental 0": the server's count of the transfers it answered.
func kindsString(m map[string]float64) string {
	if len(m) == 0 {
		return "none counted"
	}
	var out []string
	for _, k := range transferKinds {
		if v, ok := m[k]; ok {
			out = append(out, fmt.Sprintf("%s %.0f", k, v))
		}
	}
	return strings.Join(out, ", ")
}

// ixfrTargets checks phase I against issue 26's goal at 1M names; a run without that size is
// "not measured".
func ixfrTargets(i *iResults) []target {
	t := target{what: "IXFR after a change of one record at 1M names", goal: fmt.Sprintf("<= %d records moved, SOAs aside", ixfrLimit)}
	var row *iRow
	if i != nil {
		for k := range i.rows {
			if i.rows[k].names >= scaleMillion && (row == nil || i.rows[k].names < row.names) {
				row = &i.rows[k]
			}
		}
	}
	switch {
	case row == nil && i != nil:
		t.status = fmt.Sprintf("not measured (no size of %s names or more in -inames)", countName(scaleMillion))
	case row == nil:
		t.status = status(false, false)
	default:
		t.measured = fmt.Sprintf("%d records + %d SOAs, %s in %s (the AXFR: %d records, %s in %s); %s", row.moved, row.soas,
			sizeString(row.ixfr.bytes), ms(row.ixfr.took.Seconds()), row.axfr.records, sizeString(row.axfr.bytes), ms(row.axfr.took.Seconds()), answerKind(row))
		t.status = status(true, row.moved <= ixfrLimit && row.incremental)
	}
	if i != nil && i.restarts != nil {
		return append([]target{t}, restartTargets(i.restarts)...)
	}
	return []target{t}
}

// answerKind says whether the IXFR was a difference or the whole zone.
func answerKind(row *iRow) string {
	if row.incremental {
		return "a difference"
	}
	return "the whole zone, AXFR-style"
}

// sizeString is a byte count in kB or MB.
func sizeString(b int64) string {
	if b < 1<<20 {
		return fmt.Sprintf("%.1f kB", float64(b)/1024)
	}
	return fmt.Sprintf("%.1f MB", mb(b))
}
