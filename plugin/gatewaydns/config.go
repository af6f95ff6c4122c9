package gatewaydns

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/batchrun"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/publish"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/xfr"
)

// config is one parsed stanza. Options and defaults are the stock etcd plugin's, so that
// renaming etcd to gatewaydns in a Corefile serves the same answers.
type config struct {
	server         string // the server block's address(es), as metrics label them: see serverLabel
	zones          []string
	prefix         string
	etcd           store.Config
	etcdTLSFiles   []byte   // the content of the tls files, so that a rotated certificate is a new configuration
	options        []string // the stanza's option lines as written, for the publish role's Key
	root           string   // the server block's root, which relative tls file names are read from
	minLeaseTTL    uint32
	maxLeaseTTL    uint32
	negativeTTL    uint32
	negativeTTLSet bool
	apex           *answer.Apex  // the SOA's fields and the nameservers
	xfr            xfr.Config    // zone transfers and NOTIFYs
	notifyAt       string        // the file and line of notify-key, for its error at startup
	leaseGrace     time.Duration // how long a key deleted by its lease's expiry is still answered
	noApexFallback bool
	explain        bool
	exactNames     bool     // answer a name from its own key and record-id children only
	fall           []string // nil: no fallthrough; empty: every zone
	batch          batchrun.Mode
	batchAt        string // the file and line of udp-batch, for its error at startup
	steering       steering

	publish     *publish.Config // nil: this stanza does not publish
	publishOnly bool            // publish, and leave answering the zone to the plugins after it
}

// publishStanza is what the publish role takes from the stanza.
func (c *config) publishStanza() publish.Stanza {
	return publish.Stanza{Server: c.server, Zones: c.zones, Prefix: c.prefix, Etcd: c.etcd, Options: c.options, EtcdTLSFiles: c.etcdTLSFiles}
}

// feedKey is what two stanzas must have in common to share a feed across a reload: the same
// records, read from the same etcd as the same user, answered with the same options and
// health-checked the same way (the feed runs the checks), for the same server block (by its
// address). The server is in the key so that a feed's series belong
// to one server block, and two blocks on the same zones export their own numbers: a reload
// of a block keeps its address and shares its feed as before. Two blocks that would otherwise
// share a feed (same zones, same etcd, same options, other ports) watch and hold the records
// twice; merging them into one block (one key per port, or bind) shares them again. The other
// way, one feed fanned out to one set of series per block attached to it, would have to give a
// block attaching to a running feed the feed's gauges at once (etcd_reachable is set on a
// change only), and drop a block's series when it detaches: state for a Corefile that has
// a cheap fix.
func (c *config) feedKey() string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q %q %q %q %d %d %d %t %d %v\n", c.server, c.zones, c.prefix, c.etcd.Endpoints, c.etcd.Username,
		c.etcd.Password, c.minLeaseTTL, c.maxLeaseTTL, c.negativeTTL, c.exactNames, c.leaseGrace, c.steering.health)
	h.Write(c.etcdTLSFiles)
	return hex.EncodeToString(h.Sum(nil))
}
