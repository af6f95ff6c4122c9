package gatewaydns

import (
	"context"
	"fmt"
	"math"
	"net"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/dnsutil"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/option"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// apex is what a stanza says about the apex of its zones: the SOA's fields and the zones'
// nameservers. Its zero value is the stock etcd plugin's SOA, and NS records from the keys
// below ns.dns.<zone> alone, with the SOA's MNAME where there are none: a zone without NS
// records is one that BIND, Knot and NSD refuse to load as secondaries.
type apex struct {
	mname, rname           string // "" stands for the stock ns.dns.<zone> and hostmaster.<zone>
	refresh, retry, expire uint32
	nameservers            []nameserver
}

// nameserver is one name of the nameserver option, with the glue addresses given for it.
type nameserver struct {
	name string
	glue []net.IP
}

// The stock etcd plugin's SOA timers (plugin.SOA), the defaults.
const (
	stockRefresh = 7200
	stockRetry   = 1800
	stockExpire  = 86400
)

func newApex() *apex {
	return &apex{refresh: stockRefresh, retry: stockRetry, expire: stockExpire}
}

// soa is the zone's SOA record, as plugin.SOA makes it, with the stanza's fields: the minimum
// is the backend's (negative-ttl), and so is the TTL, at most 300 s.
func (a *apex) soa(b plugin.ServiceBackend, zone string, state request.Request) *dns.SOA {
	return a.soaAt(zone, b.Serial(state), b.MinTTL(state))
}

// soaAt is the zone's SOA record at serial, its minimum (and TTL, at most 300 s) minTTL.
func (a *apex) soaAt(zone string, serial, minTTL uint32) *dns.SOA {
	mname, rname := a.mname, a.rname
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
		Refresh: a.refresh,
		Retry:   a.retry,
		Expire:  a.expire,
		Minttl:  minTTL,
	}
}

// ns answers an NS question for the apex of zone: the records of the keys below ns.dns.<zone>
// (an address names the nameserver by its key, targetstrip labels taken off (record.TargetName),
// with that address as glue, as plugin.NS does;
// a host name is the nameserver itself, where plugin.NS fails the whole answer), then the
// nameserver option's names, glue for those in zone. With neither, the SOA's MNAME: the
// apex of a zone always has NS records, so an NS question there is never NXDOMAIN.
func (a *apex) ns(ctx context.Context, b plugin.ServiceBackend, zone string, state request.Request, opt plugin.Options) (records, extra []dns.RR, err error) {
	ask := state.NewWithQuestion(dnsutil.Join("ns.dns", zone), dns.TypeNS)
	services, err := b.Services(ctx, ask, false, opt)
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
			extra = append(extra, addressRR(target, s.TTL, ip))
			add(target, s.TTL)
		case dns.TypeCNAME:
			add(strings.ToLower(dns.Fqdn(s.Host)), s.TTL)
		}
	}
	for _, n := range a.nameservers {
		add(n.name, index.DefaultTTL)
		if dns.IsSubDomain(zone, n.name) {
			for _, ip := range n.glue {
				extra = append(extra, addressRR(n.name, index.DefaultTTL, ip))
			}
		}
	}
	if len(records) == 0 {
		add(a.soa(b, zone, state).Ns, index.DefaultTTL)
	}
	return records, extra, nil
}

// glue is the nameserver option's addresses for name (lower case) of type qtype, nil for the
// names it gives none.
func (a *apex) glue(name string, qtype uint16) []dns.RR {
	var rrs []dns.RR
	for _, n := range a.nameservers {
		if n.name != name {
			continue
		}
		for _, ip := range n.glue {
			if rr := addressRR(name, index.DefaultTTL, ip); rr.Header().Rrtype == qtype {
				rrs = append(rrs, rr)
			}
		}
	}
	return rrs
}

// glued tells whether the nameserver option gives name (lower case) addresses: such a name is
// a nameserver, which is never an alias (RFC 2181 10.3), so a CNAME published for it does not
// answer beside the glue, nor go to secondaries.
func (a *apex) glued(name string) bool {
	for _, n := range a.nameservers {
		if n.name == name && len(n.glue) > 0 {
			return true
		}
	}
	return false
}

// zoneGlue is the nameserver option's addresses for the names in zone, for its transfer.
func (a *apex) zoneGlue(zone string) []dns.RR {
	var rrs []dns.RR
	for _, n := range a.nameservers {
		if dns.IsSubDomain(zone, n.name) {
			for _, ip := range n.glue {
				rrs = append(rrs, addressRR(n.name, index.DefaultTTL, ip))
			}
		}
	}
	return rrs
}

// zoneNames are the nameserver option's names in zone: the apex's records hold their glue.
func (a *apex) zoneNames(zone string) []string {
	var names []string
	for _, n := range a.nameservers {
		if dns.IsSubDomain(zone, n.name) {
			names = append(names, n.name)
		}
	}
	return names
}

func addressRR(name string, ttl uint32, ip net.IP) dns.RR {
	hdr := dns.RR_Header{Name: name, Class: dns.ClassINET, Ttl: ttl}
	if v4 := ip.To4(); v4 != nil {
		hdr.Rrtype = dns.TypeA
		return &dns.A{Hdr: hdr, A: v4}
	}
	hdr.Rrtype = dns.TypeAAAA
	return &dns.AAAA{Hdr: hdr, AAAA: ip}
}

// backendError is plugin.BackendError with the stanza's SOA.
func (g *GatewayDNS) backendError(b plugin.ServiceBackend, zone string, rcode int, state request.Request, err error) (int, error) {
	m := new(dns.Msg)
	m.SetRcode(state.Req, rcode)
	m.Authoritative = true
	m.Ns = []dns.RR{g.apexOf().soa(b, zone, state)}
	state.W.WriteMsg(m)
	return dns.RcodeSuccess, err
}

// apexOf is the stanza's apex, the stock one for a handler built without a stanza's config.
func (g *GatewayDNS) apexOf() *apex {
	if g.apex == nil {
		return newApex()
	}
	return g.apex
}

// parseSOA reads "soa FIELD VALUE [FIELD VALUE]...": mname, rname (a name, or a mailbox such
// as hostmaster@example.net), refresh, retry, expire (seconds or durations) and minimum (the
// negative-ttl option under its SOA name).
func parseSOA(args []string, a *apex, cfg *config) error {
	if len(args) == 0 || len(args)%2 != 0 {
		return fmt.Errorf("soa needs FIELD VALUE pairs (mname, rname, refresh, retry, expire, minimum)")
	}
	for i := 0; i < len(args); i += 2 {
		field, value := args[i], args[i+1]
		switch field {
		case "mname":
			name, err := domainArg(value)
			if err != nil {
				return fmt.Errorf("soa mname: %w", err)
			}
			a.mname = name
		case "rname":
			if local, domain, ok := strings.Cut(value, "@"); ok {
				value = strings.ReplaceAll(local, ".", `\.`) + "." + domain
			}
			name, err := domainArg(value)
			if err != nil {
				return fmt.Errorf("soa rname: %w", err)
			}
			a.rname = name
		case "refresh", "retry", "expire":
			v, err := option.TTL(value, 1, math.MaxUint32)
			if err != nil {
				return fmt.Errorf("soa %s %q: %w", field, value, err)
			}
			*map[string]*uint32{"refresh": &a.refresh, "retry": &a.retry, "expire": &a.expire}[field] = v
		case "minimum":
			if err := setNegativeTTL(value, cfg); err != nil {
				return fmt.Errorf("soa minimum %q: %w", value, err)
			}
		default:
			return fmt.Errorf("soa has no field %q: mname, rname, refresh, retry, expire or minimum", field)
		}
	}
	return nil
}

// parseNameserver reads "nameserver NAME [ADDRESS...]": a nameserver of the stanza's zones,
// with glue addresses, which only a name inside one of the zones can have.
func parseNameserver(args []string, a *apex, zones []string) error {
	if len(args) == 0 {
		return fmt.Errorf("nameserver needs a NAME, then its ADDRESSes if it is inside the zone")
	}
	name, err := domainArg(args[0])
	if err != nil {
		return fmt.Errorf("nameserver: %w", err)
	}
	n := nameserver{name: name}
	for _, s := range args[1:] {
		ip := net.ParseIP(s)
		if ip == nil {
			return fmt.Errorf("nameserver %s: %q is not an IP address", args[0], s)
		}
		n.glue = append(n.glue, ip)
	}
	if len(n.glue) > 0 && plugin.Zones(zones).Matches(name) == "" {
		return fmt.Errorf("nameserver %s: addresses (glue) only for a name inside the zones %s", args[0], strings.Join(zones, " "))
	}
	for _, o := range a.nameservers {
		if o.name == name {
			return fmt.Errorf("nameserver %s is given twice", args[0])
		}
	}
	a.nameservers = append(a.nameservers, n)
	return nil
}

// domainArg is a domain name option value, lower case and fully qualified.
func domainArg(s string) (string, error) {
	if _, ok := dns.IsDomainName(s); !ok || s == "" || s == "." {
		return "", fmt.Errorf("%q is not a domain name", s)
	}
	return strings.ToLower(dns.Fqdn(s)), nil
}
