package main

import "strings"

// renderIXFR is the report's section on phase I.
func renderIXFR(p func(string, ...any), i *iResults) {
	p("## I: the size of an IXFR after a change of one record")
	p("")
	p("For each zone size, gatewaydns with the dataset under its own prefix (`path /benchiN`) and")
	p("`transfer { to * }`, nobody querying it (so the transfers are not paced). One AXFR, checked")
	p("complete (the SOA first and last, every name), at serial S; then one record changes in etcd (an")
	p("A record gets another address), and once the primary's SOA has a newer serial, an IXFR from S,")
	p("read as a secondary reads it (miekg/dns `dns.Transfer`). Moved: the records of the IXFR other")
	p("than SOAs. Bytes: read from the TCP connection, length prefixes included. Difference: the")
	p("answer is incremental (RFC 1995: the new SOA, then the SOA of S, ...), not the whole zone.")
	p("Server: the transfers the server counted (`coredns_gatewaydns_transfers_total` by kind) for the IXFR.")
	p("")
	p("| names | records in etcd | AXFR records | AXFR bytes | AXFR time | change to new serial | IXFR moved | IXFR SOAs | IXFR bytes | IXFR time | difference | server | bytes IXFR / AXFR |")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|")
	for _, r := range i.rows {
		p("| %d | %d | %d | %s | %s | %s | %d | %d | %s | %s | %s | %s | %.5f |", r.names, r.records, r.axfr.records, sizeString(r.axfr.bytes),
			ms(r.axfr.took.Seconds()), ms(r.applied.Seconds()), r.moved, r.soas, sizeString(r.ixfr.bytes), ms(r.ixfr.took.Seconds()),
			yesNo(r.incremental), kindsString(r.kinds), ratio(float64(r.ixfr.bytes), float64(r.axfr.bytes)))
	}
	p("")
	for _, r := range i.rows {
		p("At %d names, the change: %s (serial %d to %d). The IXFR's records other than SOAs, the first %d:", r.names, r.change, r.from, r.to, movedShown)
		p("")
		p("```")
		p("%s", strings.Join(r.movedRRs, "\n"))
		p("```")
		p("")
	}
	if i.restarts != nil {
		renderRestarts(p, i.restarts)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
