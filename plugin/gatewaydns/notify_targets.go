package gatewaydns

import (
	"fmt"
	"net"
	"slices"

	coreparse "github.com/coredns/coredns/plugin/pkg/parse"
	"github.com/miekg/dns"
)

// notifyConfig is where the stanza sends its NOTIFYs: its own list (the notify option), read
// from the Corefile rather than from the transfer plugin's unexported fields. Without it the
// transfer plugin's exported Notify sends them to its `to` list: unsigned, one secondary after
// another, a few tries each.
type notifyConfig struct {
	to     []string // host:port
	source net.IP   // nil: the system picks the source address
	key    string   // the tsig plugin's key to sign with; "": the only one, or the first by name
}

// parseNotify reads "notify ADDRESS..." (repeatable), "notify-source ADDRESS" and
// "notify-key NAME".
func parseNotify(opt string, args []string, n *notifyConfig) error {
	switch opt {
	case "notify":
		if len(args) == 0 {
			return fmt.Errorf("notify needs the secondaries' ADDRESSes (host or host:port)")
		}
		hosts, err := coreparse.HostPortOrFile(args...)
		if err != nil {
			return fmt.Errorf("notify: %w", err)
		}
		for _, h := range hosts {
			if !slices.Contains(n.to, h) {
				n.to = append(n.to, h)
			}
		}
	case "notify-source":
		if len(args) != 1 || net.ParseIP(args[0]) == nil {
			return fmt.Errorf("notify-source needs one IP address, the NOTIFYs' source")
		}
		n.source = net.ParseIP(args[0])
	case "notify-key":
		if len(args) != 1 {
			return fmt.Errorf("notify-key needs the NAME of a key of the tsig plugin")
		}
		n.key = dns.CanonicalName(args[0])
	}
	return nil
}

// signingKey is the TSIG key NOTIFYs are signed with, from the server block's tsig plugin
// (name -> secret): the one notify-key names, else the only one, else the first by name. ok
// is false when there is no key to sign with; err names a notify-key the tsig plugin lacks.
func (n *notifyConfig) signingKey(secrets map[string]string) (name, secret string, ok bool, err error) {
	if n.key != "" {
		s, found := secrets[n.key]
		if !found {
			return "", "", false, fmt.Errorf("notify-key %s: the tsig plugin of the server block has no such key", n.key)
		}
		return n.key, s, true, nil
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
