package gatewaydns

import "github.com/miekg/dns"

// Transfer implements transfer.Transferer: the stock transfer plugin serves AXFR and IXFR of the
// stanza's zones, which package xfr sends from the records the stanza answers from, as CoreDNS's
// file and etcd plugins hand their transfers to their zones.
func (g *GatewayDNS) Transfer(zone string, serial uint32) (<-chan []dns.RR, error) {
	return g.stanza.transfers.Transfer(zone, serial)
}
