// The options of the apex in the Corefile stanza (soa, nameserver, and negative-ttl, the SOA's
// minimum), read into an answer.Apex.

package gatewaydns

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/option"
)

// setNegativeTTL sets the SOA minimum, given as negative-ttl or as soa minimum: once.
func setNegativeTTL(value string, cfg *config) error {
	if cfg.negativeTTLSet {
		return errors.New("given twice (negative-ttl and soa minimum are the same field)")
	}
	ttl, err := option.TTL(value, 0, math.MaxUint32)
	if err == nil && ttl > index.MaxNegativeTTL {
		// Said in words rather than as option.TTL's range: why the bound is what it is.
		err = fmt.Errorf("at most %ds: CoreDNS gives the SOA record a TTL of at most that, and resolvers cache a negative answer for the smaller of the two", index.MaxNegativeTTL)
	}
	if err != nil {
		return err
	}
	cfg.negativeTTL, cfg.negativeTTLSet = ttl, true
	return nil
}

// parseSOA reads "soa FIELD VALUE [FIELD VALUE]...": mname, rname (a name, or a mailbox such
// as hostmaster@example.net), refresh, retry, expire (seconds or durations) and minimum (the
// negative-ttl option under its SOA name).
func parseSOA(args []string, a *answer.Apex, cfg *config) error {
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
func parseNameserver(args []string, a *answer.Apex, zones []string) error {
	if len(args) == 0 {
		return fmt.Errorf("nameserver needs a NAME, then its ADDRESSes if it is inside the zone")
	}
	name, err := domainArg(args[0])
	if err != nil {
		return fmt.Errorf("nameserver: %w", err)
	}
	n := answer.Nameserver{Name: name}
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
