// Where NOTIFYs go: the secondaries the transfer plugin names, and the notify option's.

package xfr

import (
	"net"

	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/parse"
	"github.com/coredns/coredns/plugin/pkg/transport"
)

// Secondaries are listed once, in the transfer plugin's `to` lines: they are who may transfer
// the zones, and so who is told of a change. The transfer plugin sends a NOTIFY only when a
// plugin calls its Notify (it sends none of its own accord): unsigned, to one secondary after
// another, three tries each. gatewaydns never calls it, and sends its own instead, to the same
// addresses, read from the server block's transfer stanzas (ParseTransfer; the plugin's setup
// reads them back from the Corefile, since the transfer plugin keeps them in unexported
// fields): signed with the tsig plugin's key, paced, sent again until answered, replaced by a
// newer serial (notify.go, notify_send.go). The notify option adds addresses the transfer
// plugin does not name (a secondary that transfers through a proxy, say); an address in both
// is notified once.

// TransferStanza is one stanza of the server block's transfer plugin: its zones, the
// secondaries in its `to` lines ("*" for anyone) and its source address.
type TransferStanza struct {
	Zones  []string
	To     []string // host:port, or "*"
	Source net.IP
}

// ParseTransfer reads the transfer plugin's stanzas from its tokens (d), as the plugin's own
// setup reads them (plugin/transfer setup.go): "transfer [ZONES...] { to HOST... ; source IP }",
// the zones the server block's (keys) where none are given.
func ParseTransfer(d *caddyfile.Dispenser, keys []string) ([]TransferStanza, error) {
	var stanzas []TransferStanza
	for d.Next() {
		x := TransferStanza{Zones: plugin.OriginsFromArgsOrServerBlock(d.RemainingArgs(), keys)}
		for d.NextBlock() {
			switch d.Val() {
			case "to":
				args := d.RemainingArgs()
				if len(args) == 0 {
					return nil, d.ArgErr()
				}
				for _, host := range args {
					if host == "*" {
						x.To = append(x.To, host)
						continue
					}
					normalized, err := parse.HostPort(host, transport.Port)
					if err != nil {
						return nil, d.Errf("transfer to %s: %v", host, err)
					}
					x.To = append(x.To, normalized)
				}
			case "source":
				args := d.RemainingArgs()
				if len(args) != 1 || net.ParseIP(args[0]) == nil {
					return nil, d.ArgErr()
				}
				x.Source = net.ParseIP(args[0])
			default:
				return nil, d.Errf("transfer: unknown property %q", d.Val())
			}
		}
		stanzas = append(stanzas, x)
	}
	return stanzas, nil
}

// notifyAddr is a secondary to NOTIFY, and the source address to send from (nil: the
// system's choice).
type notifyAddr struct {
	addr   string
	source net.IP
}

// notifyTargets are the secondaries NOTIFYs of zone go to: the notify option's, then those of
// the transfer stanza that transfers zone (the longest match of its zones, as the transfer
// plugin picks it) but "*", each once.
func (c *Config) notifyTargets(zone string) []notifyAddr {
	var targets []notifyAddr
	seen := map[string]bool{}
	add := func(addr string, source net.IP) {
		if !seen[addr] {
			seen[addr] = true
			targets = append(targets, notifyAddr{addr, source})
		}
	}
	for _, addr := range c.Notify {
		add(addr, c.NotifySource)
	}
	if x := longestMatch(c.Transfer, zone); x != nil {
		source := x.Source
		if source == nil {
			source = c.NotifySource
		}
		for _, addr := range x.To {
			if addr != "*" {
				add(addr, source)
			}
		}
	}
	return targets
}

// longestMatch is the transfer stanza whose zones match name longest, as the transfer plugin
// finds it (plugin/transfer transfer.go); nil for none.
func longestMatch(stanzas []TransferStanza, name string) *TransferStanza {
	var x *TransferStanza
	zone := ""
	for i := range stanzas {
		if z := plugin.Zones(stanzas[i].Zones).Matches(name); z != "" {
			if len(z) > len(zone) || (len(z) == len(zone) && z > zone) {
				zone, x = z, &stanzas[i]
			}
		}
	}
	return x
}
