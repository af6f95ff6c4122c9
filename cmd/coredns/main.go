// Command coredns is stock CoreDNS with the gatewaydns plugin compiled in.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/gatewaydns/gatewaydns/cmd/coredns/plugins" // every plugin of plugin.cfg, in its order
)

func main() { coremain.Run() }
