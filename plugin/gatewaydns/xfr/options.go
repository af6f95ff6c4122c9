// The options of zone transfers and NOTIFYs in the Corefile stanza.

package xfr

import (
	"fmt"
	"net"
	"slices"

	coreparse "github.com/coredns/coredns/plugin/pkg/parse"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/option"
)

// Config is what the stanza's options say of its transfers and NOTIFYs. The NOTIFYs go to the
// secondaries of the server block's transfer plugin (Transfer) and of the notify option
// (secondaries.go).
type Config struct {
	// Synthetic puts into a transfer what the plugin synthesises too: an SRV record for every
	// address (port 0 where none is stored) and the record-id names (transfer-synthetic).
	Synthetic    bool
	Notify       []string // host:port
	NotifySource net.IP   // nil: the system picks the source address
	NotifyKey    string   // the tsig plugin's key to sign with; "": the only one, or the first by name
	Catalog      string   // the name of the catalog zone of the stanza's zones (RFC 9432); "": none
	// Transfer are the server block's transfer stanzas, read back from its Corefile by the
	// plugin's setup (ParseTransfer); none where the block has no transfer plugin.
	Transfer []TransferStanza
}

// Options are the options of zone transfers and NOTIFYs: transfer-synthetic, "notify
// ADDRESS..." (repeatable), "notify-source ADDRESS", "notify-key NAME" and "catalog NAME".
var Options = option.Table[*Config]{
	"transfer-synthetic": option.Flag(func(c *Config) { c.Synthetic = true }),
	"notify": func(c *Config, _ string, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("notify needs the secondaries' ADDRESSes (host or host:port)")
		}
		hosts, err := coreparse.HostPortOrFile(args...)
		if err != nil {
			return fmt.Errorf("notify: %w", err)
		}
		for _, h := range hosts {
			if !slices.Contains(c.Notify, h) {
				c.Notify = append(c.Notify, h)
			}
		}
		return nil
	},
	"notify-source": func(c *Config, _ string, args []string) error {
		if len(args) != 1 || net.ParseIP(args[0]) == nil {
			return fmt.Errorf("notify-source needs one IP address, the NOTIFYs' source")
		}
		c.NotifySource = net.ParseIP(args[0])
		return nil
	},
	"catalog": func(c *Config, _ string, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("catalog needs the NAME of the catalog zone, e.g. catalog.invalid")
		}
		if _, ok := dns.IsDomainName(args[0]); !ok {
			return fmt.Errorf("catalog: %q is not a domain name", args[0])
		}
		c.Catalog = dns.CanonicalName(args[0])
		return nil
	},
	"notify-key": func(c *Config, _ string, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("notify-key needs the NAME of a key of the tsig plugin")
		}
		c.NotifyKey = dns.CanonicalName(args[0])
		return nil
	},
}

// SigningKey is the TSIG key NOTIFYs are signed with, from the server block's tsig plugin
// (name -> secret): the one notify-key names, else the only one, else the first by name. ok
// is false when there is no key to sign with; err names a notify-key the tsig plugin lacks.
func (c *Config) SigningKey(secrets map[string]string) (name, secret string, ok bool, err error) {
	if c.NotifyKey != "" {
		s, found := secrets[c.NotifyKey]
		if !found {
			return "", "", false, fmt.Errorf("notify-key %s: the tsig plugin of the server block has no such key", c.NotifyKey)
		}
		return c.NotifyKey, s, true, nil
	}
	if len(secrets) == 0 {
		return "", "", false, nil
	}
	names := make([]string, 0, len(secrets))
	for k := range secrets {
		names = append(names, k)
	}
	slices.Sort(names)
	return names[0], secrets[names[0]], true, nil
}
