package steer

import (
	"fmt"
	"strings"
	"sync"

	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/option"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Tally counts the answers of steered names by owner, for the names of an allow-list alone
// (shared/spec/steering.md: answers by name and owner, of bounded cardinality): a landscape of
// 10,000 names of two owners each would be 20,000 series on every replica, most saying what
// the weights already say. A name's counters are made on first use and kept. Their series
// exist only once an owner is answered: the metric is declared here, beside the other series
// of a configured list (healthcheck's per target), not with those made at start.
type Tally struct {
	server string
	names  map[string]*tallied // by the name's key (its records' parent key); read-only once made
}

var answersByOwner = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: plugin.Namespace, Subsystem: "gatewaydns", Name: "steering_answers_total",
	Help: "Answers of the steered names of the steering-metrics option, by owner answered (an answer of several owners counts for each).",
}, []string{"server", "name", "owner"})

type tallied struct {
	name   string   // as the metric labels it
	owners sync.Map // owner id -> prometheus.Counter
}

// NewTally counts the answers of names (by key -> name) in the series of server; nil when
// names is empty, which counts nothing at no cost.
func NewTally(server string, names map[string]string) *Tally {
	if len(names) == 0 {
		return nil
	}
	t := &Tally{server: server, names: make(map[string]*tallied, len(names))}
	for key, name := range names {
		t.names[key] = &tallied{name: name}
	}
	return t
}

// Counts reports whether t counts the answers of the name of nameKey.
func (t *Tally) Counts(nameKey string) bool {
	if t == nil {
		return false
	}
	_, ok := t.names[nameKey]
	return ok
}

// Count counts one answer of the name of nameKey from the owners chosen (indexes into owners).
func (t *Tally) Count(nameKey string, owners []Owner, chosen []int) {
	if t == nil {
		return
	}
	n := t.names[nameKey]
	if n == nil {
		return
	}
	for _, o := range chosen {
		id := owners[o].ID
		c, ok := n.owners.Load(id)
		if !ok {
			c, _ = n.owners.LoadOrStore(id, answersByOwner.WithLabelValues(t.server, n.name, id))
		}
		c.(prometheus.Counter).Inc()
	}
}

// TallyConfig is what the steering-metrics option says, to be built with Build.
type TallyConfig struct {
	names []string // fully qualified, lower case
}

// TallyOptions is the option of a stanza that lists the names whose answers are counted by
// owner:
//
//	steering-metrics <name>...
var TallyOptions = option.Table[*TallyConfig]{
	"steering-metrics": option.Words(func(c *TallyConfig, vs []string) error {
		for _, v := range vs {
			if _, ok := dns.IsDomainName(v); !ok || strings.Contains(v, "*") {
				return fmt.Errorf("steering-metrics: %q is not a name", v)
			}
			c.names = append(c.names, strings.ToLower(dns.Fqdn(v)))
		}
		return nil
	}),
}

// Build is the Tally, in the series of server, of the names listed, each in one of zones,
// whose records are under prefix; nil when none is listed.
func (c *TallyConfig) Build(server, prefix string, zones []string) (*Tally, error) {
	names := map[string]string{}
	for _, n := range c.names {
		if plugin.Zones(zones).Matches(n) == "" {
			return nil, fmt.Errorf("steering-metrics: %s is in none of the zones %v", n, zones)
		}
		names[record.NamePath(prefix, n)] = n
	}
	return NewTally(server, names), nil
}
