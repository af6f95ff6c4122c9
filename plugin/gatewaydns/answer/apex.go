package answer

import (
	"context"
	"net"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/dnsutil"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Apex is what a stanza says about the apex of its zones: the SOA's fields and the zones'
// nameservers (the soa and nameserver options, which the plugin's setup reads). NewApex's is
// the stock etcd plugin's SOA, and NS records from the keys below ns.dns.<zone> alone, with
// the SOA's MNAME where there are none: a zone without NS records is one that BIND, Knot and
// NSD refuse to load as secondaries.
type Apex struct {
	MName, RName           string // "" stands for the stock ns.dns.<zone> and hostmaster.<zone>
	Refresh, Retry, Expire uint32
	Nameservers            []Nameserver
}

// Nameserver is one name of the nameserver option (lower case, fully qualified), with the glue
// addresses given for it.
type Nameserver struct {
	Name string
	Glue []net.IP
}

// The stock etcd plugin's SOA timers (plugin.SOA), the defaults.
const (
	stockRefresh = 7200
	stockRetry   = 1800
	stockExpire  = 86400
)

// NewApex is the stock etcd plugin's apex.
func NewApex() *Apex {
	return &Apex{Refresh: stockRefresh, Retry: stockRetry, Expire: stockExpire}
}

// SOA is the zone's SOA record, as plugin.SOA makes it, with the stanza's fields: the minimum
// is the backend's (negative-ttl), and so is the TTL, at most 300 s.
func (a *Apex) SOA(b plugin.ServiceBackend, zone string, state request.Request) *dns.SOA {
	return a.SOAAt(zone, b.Serial(state), b.MinTTL(state))
}

// SOAAt is the zone's SOA record at serial, its minimum (and TTL, at most 300 s) minTTL.
func (a *Apex) SOAAt(zone string, serial, minTTL uint32) *dns.SOA {
	mname, rname := a.MName, a.RName
	if mname == "" {
		mname = dnsutil.Join("ns.dns", zone)
	}
	if rname == "" {
		rname = dnsutil.Join("hostmaster", zone)
	}
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: min(minTTL, 300)},
		Ns:      mname,
		Mbox:    rname,
		Serial:  serial,
		Refresh: a.Refresh,
		Retry:   a.Retry,
		Expire:  a.Expire,
		Minttl:  minTTL,
	}
}

// NS answers an NS question for the apex of zone: the records of the keys below ns.dns.<zone>
// (an address names the nameserver by its key, targetstrip labels taken off (record.TargetName),
// with that address as glue, as plugin.NS does;
// a host name is the nameserver itself, where plugin.NS fails the whole answer), then the
// nameserver option's names, glue for those in zone. With neither, the SOA's MNAME: the
// apex of a zone always has NS records, so an NS question there is never NXDOMAIN.
func (a *Apex) NS(ctx context.Context, b plugin.ServiceBackend, zone string, state request.Request, opt plugin.Options) (records, extra []dns.RR, err error) {
	ask := state.NewWithQuestion(dnsutil.Join("ns.dns", zone), dns.TypeNS)
	services, err := Storage(ctx, b, ask, opt)
	if err != nil && !b.IsNameError(err) {
		return nil, nil, err
	}
	seen := map[string]bool{}
	add := func(target string, ttl uint32) {
		if !seen[target] {
			seen[target] = true
			records = append(records, &dns.NS{Hdr: dns.RR_Header{Name: state.QName(), Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: ttl}, Ns: target})
		}
	}
	for _, s := range services {
		switch what, ip := s.HostType(); what {
		case dns.TypeA, dns.TypeAAAA:
			target := record.TargetName(s.Key, s.TargetStrip)
			extra = append(extra, AddressRR(target, s.TTL, ip))
			add(target, s.TTL)
		case dns.TypeCNAME:
			add(strings.ToLower(dns.Fqdn(s.Host)), s.TTL)
		}
	}
	for _, n := range a.Nameservers {
		add(n.Name, index.DefaultTTL)
		if dns.IsSubDomain(zone, n.Name) {
			for _, ip := range n.Glue {
				extra = append(extra, AddressRR(n.Name, index.DefaultTTL, ip))
			}
		}
	}
	if len(records) == 0 {
		add(a.SOA(b, zone, state).Ns, index.DefaultTTL)
	}
	return records, extra, nil
}

// Glue is the nameserver option's addresses for name (lower case) of type qtype, nil for the
// names it gives none.
func (a *Apex) Glue(name string, qtype uint16) []dns.RR {
	var rrs []dns.RR
	for _, n := range a.Nameservers {
		if n.Name != name {
			continue
		}
		for _, ip := range n.Glue {
			if rr := AddressRR(name, index.DefaultTTL, ip); rr.Header().Rrtype == qtype {
				rrs = append(rrs, rr)
			}
		}
	}
	return rrs
}

// Glued tells whether the nameserver option gives name (lower case) addresses: such a name is
// a nameserver, which is never an alias (RFC 2181 10.3), so a CNAME published for it does not
// answer beside the glue, nor go to secondaries.
func (a *Apex) Glued(name string) bool {
	for _, n := range a.Nameservers {
		if n.Name == name && len(n.Glue) > 0 {
			return true
		}
	}
	return false
}

// ZoneGlue is the nameserver option's addresses for the names in zone, for its transfer.
func (a *Apex) ZoneGlue(zone string) []dns.RR {
	var rrs []dns.RR
	for _, n := range a.Nameservers {
		if dns.IsSubDomain(zone, n.Name) {
			for _, ip := range n.Glue {
				rrs = append(rrs, AddressRR(n.Name, index.DefaultTTL, ip))
			}
		}
	}
	return rrs
}

// ZoneNames are the nameserver option's names in zone: the apex's records hold their glue.
func (a *Apex) ZoneNames(zone string) []string {
	var names []string
	for _, n := range a.Nameservers {
		if dns.IsSubDomain(zone, n.Name) {
			names = append(names, n.Name)
		}
	}
	return names
}

// AddressRR is the A or AAAA record of name for ip.
func AddressRR(name string, ttl uint32, ip net.IP) dns.RR {
	hdr := dns.RR_Header{Name: name, Class: dns.ClassINET, Ttl: ttl}
	if v4 := ip.To4(); v4 != nil {
		hdr.Rrtype = dns.TypeA
		return &dns.A{Hdr: hdr, A: v4}
	}
	hdr.Rrtype = dns.TypeAAAA
	return &dns.AAAA{Hdr: hdr, AAAA: ip}
}
