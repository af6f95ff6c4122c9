package xfr

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/coredns/caddy"
	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
)

// StanzasOf are the server block's transfer plugin stanzas (ParseTransfer), for the
// NOTIFYs: the secondaries are listed once, in the transfer plugin's `to` lines, and gatewaydns
// notifies them itself (signed, paced, sent again until answered). A plugin's setup sees its
// own tokens only, and the transfer plugin keeps what it parsed in unexported fields; so the
// server block is read again from the Corefile input its CoreDNS instance parsed (the instance
// is the one whose storage holds c's mark, among caddy.Instances, which caddy lists before it
// sets the plugins up, at start and on a reload alike), with caddy's own parser: the same text,
// the same imports, the same blocks in the same order. Nil, logged, where the instance is not
// found (a test's controller): then only the notify option's addresses are notified.
func StanzasOf(c *caddy.Controller) ([]TransferStanza, error) {
	input := instanceInput(c)
	if input == nil {
		log.Warningf("The server block's transfer plugin could not be read: NOTIFYs go to the notify option's addresses only")
		return nil, nil
	}
	blocks, err := caddyfile.Parse(input.Path(), bytes.NewReader(input.Body()), caddy.ValidDirectives(c.ServerType()))
	if err != nil {
		return nil, fmt.Errorf("reading the server block's transfer plugin: %w", err)
	}
	if c.ServerBlockIndex >= len(blocks) {
		return nil, fmt.Errorf("reading the server block's transfer plugin: block %d of %d", c.ServerBlockIndex+1, len(blocks))
	}
	d := caddyfile.NewDispenserTokens(input.Path(), blocks[c.ServerBlockIndex].Tokens["transfer"])
	return ParseTransfer(&d, c.ServerBlockKeys)
}

// instanceMark marks the storage of the CoreDNS instance being set up, to find it among
// caddy.Instances.
type instanceMark struct{}

// instanceInput is the Corefile input of c's instance, nil where it is not found.
func instanceInput(c *caddy.Controller) caddy.Input {
	mark, _ := c.Get(instanceMark{}).(*int)
	if mark == nil {
		mark = new(int)
		c.Set(instanceMark{}, mark)
	}
	for _, inst := range caddy.Instances() {
		inst.StorageMu.RLock()
		found := inst.Storage[instanceMark{}] == mark
		inst.StorageMu.RUnlock()
		if found {
			return inst.Caddyfile()
		}
	}
	return nil
}

// CatalogMembers are the stanza's zones but the catalog zone name (the catalog option): with
// no zones named, the stanza's are the server block's (blockKeys), and the block must serve
// the catalog too, so that CoreDNS hands its questions and transfers to this block. The error
// says why the catalog cannot be served: outside the block, inside a member zone (whose
// answers would hide it), or with no member left.
func CatalogMembers(name string, zones, blockKeys []string) ([]string, error) {
	if plugin.Zones(plugin.OriginsFromArgsOrServerBlock(nil, blockKeys)).Matches(name) == "" {
		return nil, fmt.Errorf("catalog %s: the server block does not serve it; add it to the block's zones", name)
	}
	members := slices.DeleteFunc(slices.Clone(zones), func(z string) bool { return z == name })
	for _, z := range members {
		if dns.IsSubDomain(z, name) {
			return nil, fmt.Errorf("catalog %s: inside the zone %s, whose answers would hide it; name it outside the zones (catalog.invalid)", name, z)
		}
	}
	if len(members) == 0 {
		return nil, fmt.Errorf("catalog %s: no zone left to list in it", name)
	}
	return members, nil
}
