// The options of the apex in a Corefile stanza (soa, nameserver), read into an Apex: the
// model is apex.go's.

package answer

import (
	"fmt"
	"math"
	"net"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/option"
)

// ParseSOA reads "soa FIELD VALUE [FIELD VALUE]...": mname, rname (a name, or a mailbox such
// as hostmaster@example.net), refresh, retry, expire (seconds or durations) and minimum (the
// negative-ttl option under its SOA name).
func ParseSOA(args []string, a *Apex, setMinimum func(string) error) error {
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
			a.MName = name
		case "rname":
			if local, domain, ok := strings.Cut(value, "@"); ok {
				value = strings.ReplaceAll(local, ".", `\.`) + "." + domain
			}
			name, err := domainArg(value)
			if err != nil {
				return fmt.Errorf("soa rname: %w", err)
			}
			a.RName = name
		case "refresh", "retry", "expire":
			v, err := option.TTL(value, 1, math.MaxUint32)
			if err != nil {
				return fmt.Errorf("soa %s %q: %w", field, value, err)
			}
			*map[string]*uint32{"refresh": &a.Refresh, "retry": &a.Retry, "expire": &a.Expire}[field] = v
		case "minimum":
			if err := setMinimum(value); err != nil {
				return fmt.Errorf("soa minimum %q: %w", value, err)
			}
		default:
			return fmt.Errorf("soa has no field %q: mname, rname, refresh, retry, expire or minimum", field)
		}
	}
	return nil
}

// ParseNameserver reads "nameserver NAME [ADDRESS...]": a nameserver of the stanza's zones,
// with glue addresses, which only a name inside one of the zones can have.
func ParseNameserver(args []string, a *Apex, zones []string) error {
	if len(args) == 0 {
		return fmt.Errorf("nameserver needs a NAME, then its ADDRESSes if it is inside the zone")
	}
	name, err := domainArg(args[0])
	if err != nil {
		return fmt.Errorf("nameserver: %w", err)
	}
	n := Nameserver{Name: name}
	for _, s := range args[1:] {
		ip := net.ParseIP(s)
		if ip == nil {
			return fmt.Errorf("nameserver %s: %q is not an IP address", args[0], s)
		}
		n.Glue = append(n.Glue, ip)
	}
	if len(n.Glue) > 0 && plugin.Zones(zones).Matches(name) == "" {
		return fmt.Errorf("nameserver %s: addresses (glue) only for a name inside the zones %s", args[0], strings.Join(zones, " "))
	}
	for _, o := range a.Nameservers {
		if o.Name == name {
			return fmt.Errorf("nameserver %s is given twice", args[0])
		}
	}
	a.Nameservers = append(a.Nameservers, n)
	return nil
}

// domainArg is a domain name option value, lower case and fully qualified.
func domainArg(s string) (string, error) {
	if _, ok := dns.IsDomainName(s); !ok || s == "" || s == "." {
		return "", fmt.Errorf("%q is not a domain name", s)
	}
	return strings.ToLower(dns.Fqdn(s)), nil
}
