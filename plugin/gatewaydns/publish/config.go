// Package publish is the publish role of a gatewaydns stanza, shaped like an external-dns
// controller: it keeps a cluster's names in etcd (Kubernetes objects -> kubesource -> plan ->
// writer). Its Config is read from the stanza's options (Config.Parse), the CoreDNS plugin
// starts and stops its Role, and its metrics carry the owner.
package publish

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/txtregistry"
)

// pluginName is the CoreDNS plugin that runs the role: its log lines and metrics carry that
// name, as those of the serve role do.
const pluginName = "gatewaydns"

var log = clog.NewWithPlugin(pluginName)

// DefaultController is external-dns's controller name, so that objects annotated for it
// keep publishing after the migration.
const DefaultController = "dns-controller"

// Config is the publish role of a stanza: which objects to read and how to write them, and
// the stanza it is configured in.
type Config struct {
	Owner          string
	Policy         plan.Policy
	Conflicts      plan.ConflictMode
	Lease          time.Duration
	DryRun         bool
	Kubeconfig     string
	Kubecontext    string
	DomainFilter   []string
	ExcludeDomains []string
	Kinds          []string // empty: every kind but the opt-in ones (kubesource: Service, DNSEndpoint)
	Source         source.Config
	// Registry is external-dns's TXT registry to take over (txt-owner-id, txt-prefix, ...).
	Registry *txtregistry.Config

	Stanza Stanza // set by Finish
}

// Stanza is what the role takes from the stanza around it.
type Stanza struct {
	Server string // the server block's address(es), as the metrics' server label
	Zones  []string
	Prefix string       // the records' etcd path
	Etcd   store.Config // the stanza's etcd, which the writer writes to
	// Options are the stanza's option lines as written, and EtcdTLSFiles the content of its
	// tls files: a reload shares the running publisher only when both are the same (Key).
	Options      []string
	EtcdTLSFiles []byte
}

// NewConfig returns the defaults of the publish options.
func NewConfig() *Config {
	return &Config{Source: source.Config{ControllerName: DefaultController}}
}

// Finish checks the options together, once every one has been read, and completes the
// configuration with the stanza it is in.
func (c *Config) Finish(st Stanza) error {
	if c.Owner == "" {
		return errors.New("publishing needs 'owner ID', the id this cluster's records carry")
	}
	if c.Registry != nil {
		if c.Registry.Owner == "" {
			return errors.New("txt-prefix, txt-suffix and txt-wildcard-replacement describe the TXT registry of 'txt-owner-id ID', which is missing")
		}
		if err := c.Registry.Check(); err != nil {
			return err
		}
	}
	include := c.DomainFilter
	if len(include) == 0 {
		include = st.Zones
	}
	c.Source.DomainFilter = source.NewDomainFilter(include, c.ExcludeDomains)
	c.Source.Zones = source.NewDomainFilter(st.Zones, nil)
	c.Stanza = st
	return nil
}

// Key is what two stanzas must have in common to share a publisher across a reload: the same
// stanza, word for word, with the same certificates and kubeconfig behind it, in a server
// block of the same address, which the publisher's series carry: a reload that moves the
// block to another port hands the owner over to a new publisher, as a changed stanza does.
func (c *Config) Key() string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q\n", c.Stanza.Server, c.Stanza.Zones, c.Stanza.Options)
	h.Write(c.Stanza.EtcdTLSFiles)
	if c.Kubeconfig != "" {
		kubeconfig, _ := os.ReadFile(c.Kubeconfig) // unreadable: starting the publisher says so
		h.Write(kubeconfig)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Owners are the owners published by the stanzas of one Corefile, and where.
type Owners map[string]string

// Claim refuses a second stanza of one owner in one Corefile: the two would campaign in one
// election, and the names of the one that never leads would never be published. at is where
// the stanza is, as "file:line".
func (o Owners) Claim(owner, at string) error {
	if prev, ok := o[owner]; ok {
		return fmt.Errorf("owner %q is already published by the stanza at %s: two stanzas of one owner share one election, so one of them would never publish; merge them or give each its own owner", owner, prev)
	}
	o[owner] = at
	return nil
}
