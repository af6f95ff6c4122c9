// Command floor is ./coredns with one more plugin, floor, for make bench only (never shipped):
// it answers the zone from wire bytes packed once at startup, so that what a question costs
// in it is what CoreDNS's own server costs (reading the packet, a goroutine, unpacking, the
// plugin chain, writing): the floor under any plugin that answers inside CoreDNS. Phase A
// measures gatewaydns against it.
//
//	floor HOSTSFILE ZONE
//
// HOSTSFILE holds "IP name" lines (phase A's hosts file); every name gets its A or AAAA
// records, every other name in ZONE NXDOMAIN with an SOA, each with TTL 300 as gatewaydns
// answers them.
package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"

	_ "github.com/gatewaydns/gatewaydns/cmd/coredns/plugins" // every plugin of plugin.cfg, in its order
)

func init() {
	plugin.Register("floor", setup)
	// Right where gatewaydns sits in the chain.
	i := slices.Index(dnsserver.Directives, "gatewaydns")
	dnsserver.Directives = slices.Insert(slices.Clone(dnsserver.Directives), i, "floor")
}

func main() { coremain.Run() }

func setup(c *caddy.Controller) error {
	c.Next()
	args := c.RemainingArgs()
	if len(args) != 2 {
		return plugin.Error("floor", c.ArgErr())
	}
	f, err := load(args[0], dns.Fqdn(strings.ToLower(args[1])))
	if err != nil {
		return plugin.Error("floor", err)
	}
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler { f.next = next; return f })
	return nil
}

type key struct {
	name  string
	qtype uint16
}

type floor struct {
	next    plugin.Handler
	zone    string
	answers map[key][]byte // the whole reply, ID 0
	nx      []byte         // NXDOMAIN's authority section: the SOA
	bufs    sync.Pool
}

func load(file, zone string) (*floor, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	records := map[key][]dns.RR{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		ip, name := net.ParseIP(fields[0]), dns.Fqdn(strings.ToLower(fields[1]))
		if ip == nil {
			return nil, fmt.Errorf("%s: %q is not an address", file, fields[0])
		}
		hdr := dns.RR_Header{Name: name, Class: dns.ClassINET, Ttl: 300}
		if v4 := ip.To4(); v4 != nil {
			hdr.Rrtype = dns.TypeA
			records[key{name, dns.TypeA}] = append(records[key{name, dns.TypeA}], &dns.A{Hdr: hdr, A: v4})
		} else {
			hdr.Rrtype = dns.TypeAAAA
			records[key{name, dns.TypeAAAA}] = append(records[key{name, dns.TypeAAAA}], &dns.AAAA{Hdr: hdr, AAAA: ip})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	f := &floor{zone: zone, answers: make(map[key][]byte, len(records))}
	f.bufs.New = func() any { b := make([]byte, 0, 512); return &b }
	for k, rrs := range records {
		m := new(dns.Msg)
		m.SetQuestion(k.name, k.qtype)
		m.Response, m.Authoritative, m.RecursionDesired = true, true, false
		m.Answer = rrs
		if f.answers[k], err = m.Pack(); err != nil {
			return nil, err
		}
	}
	soa := &dns.SOA{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 30},
		Ns: "ns.dns." + zone, Mbox: "hostmaster." + zone, Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: 30}
	buf := make([]byte, dns.Len(soa))
	n, err := dns.PackRR(soa, buf, 0, nil, false)
	if err != nil {
		return nil, err
	}
	f.nx = buf[:n]
	return f, nil
}

func (f *floor) Name() string { return "floor" }

// ServeDNS writes the packed reply with the question's ID and RD bit, or NXDOMAIN with the
// question copied in; what it does not hold goes to the next plugin.
func (f *floor) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	if !dns.IsSubDomain(f.zone, name) || q.Qclass != dns.ClassINET || r.IsEdns0() != nil {
		return plugin.NextOrFailure(f.Name(), f.next, ctx, w, r)
	}
	bp := f.bufs.Get().(*[]byte)
	defer f.bufs.Put(bp)
	out := (*bp)[:0]
	if ans, ok := f.answers[key{name, q.Qtype}]; ok {
		out = append(out, ans...)
	} else {
		out = append(out, make([]byte, 12)...)
		out[5], out[9] = 1, 1 // one question, one authority record
		out[3] = dns.RcodeNameError
		var err error
		if out, err = appendQuestion(out, q); err != nil {
			return dns.RcodeServerFailure, err
		}
		out = append(out, f.nx...)
		out[2] = 0x84 // QR, AA
	}
	out[0], out[1] = byte(r.Id>>8), byte(r.Id)
	if r.RecursionDesired {
		out[2] |= 0x01
	}
	*bp = out
	if _, err := w.Write(out); err != nil {
		return dns.RcodeServerFailure, err
	}
	return dns.RcodeSuccess, nil
}

func appendQuestion(out []byte, q dns.Question) ([]byte, error) {
	off := len(out)
	out = append(out, make([]byte, len(q.Name)+6)...)
	n, err := dns.PackDomainName(q.Name, out, off, nil, false)
	if err != nil {
		return nil, err
	}
	out = out[:n+4]
	out[n], out[n+1], out[n+2], out[n+3] = byte(q.Qtype>>8), byte(q.Qtype), byte(q.Qclass>>8), byte(q.Qclass)
	return out, nil
}
