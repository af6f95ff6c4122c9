package prepacked

import (
	"slices"

	"github.com/coredns/coredns/core/dnsserver"
)

// What the plugins of a server block in front of gatewaydns do with the replies it writes,
// from their names: a packed reply is written as bytes (ResponseWriter.Write), which a plugin
// that reads the reply as a dns.Msg cannot see; such a plugin in front means messages.

// Writes is how the handler may write its replies, given the plugins in front of it.
type Writes int32

const (
	WritesMsgs     Writes = iota // a plugin in front reads replies as messages
	WritesNoErrors               // prometheus is in front: its recorder counts a written reply as NOERROR
	WritesAll                    // nothing in front reads replies
)

// bytesThrough are the plugins that pass the writer of a question gatewaydns answers packed (a
// plain QUERY of class IN, no EDNS option, no TSIG) to the next plugin untouched, or answer
// before it: a reply written as bytes reaches the client, and nothing of theirs is missed.
var bytesThrough = map[string]bool{
	"metadata": true, "geoip": true, "cancel": true, "proxyproto": true, "nsid": true, "bufsize": true, "bind": true,
	"debug": true, "ready": true, "health": true, "pprof": true, "errors": true, "local": true, "any": true,
	"chaos": true, "tsig": true, "acl": true, "transfer": true, "dynupdate": true, "template": true, "hosts": true,
	"route53": true, "azure": true, "clouddns": true, "k8s_external": true, "kubernetes": true, "file": true, "auto": true,
	"secondary": true,
}

// InFront are the names of the handlers of the server block of cfg that run before the plugin
// own: in the order of the directives, which is the chain's. A handler not among the
// directives (an external plugin compiled in otherwise) counts as in front.
func InFront(cfg *dnsserver.Config, own string) []string {
	at := slices.Index(dnsserver.Directives, own)
	var out []string
	for _, h := range cfg.Handlers() {
		if i := slices.Index(dnsserver.Directives, h.Name()); i < at {
			out = append(out, h.Name())
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		return slices.Index(dnsserver.Directives, a) - slices.Index(dnsserver.Directives, b)
	})
	return out
}

// WritesFor is how the handler writes behind the plugins in front.
func WritesFor(front []string) Writes {
	w := WritesAll
	for _, name := range front {
		switch {
		case bytesThrough[name]:
		case name == "prometheus":
			w = WritesNoErrors
		default:
			return WritesMsgs
		}
	}
	return w
}
