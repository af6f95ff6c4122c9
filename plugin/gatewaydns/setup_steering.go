// The steering options of the serve role (shared/spec/steering.md): how this server's health
// checks run (package healthcheck's table) and where its clients are (package steer's
// locality table). Both tables are tried after the serve role's and the transfers' own.

package gatewaydns

import (
	"fmt"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/healthcheck"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/steer"
)

// steering is what a stanza's steering options say.
type steering struct {
	health     healthcheck.Config
	healthAt   string // the file and line of the last healthcheck option, for Check's error
	locality   steer.LocalityConfig
	localityAt string          // the file and line of the last locality option, for Build's error
	loc        *steer.Locality // built from locality once the stanza is read; nil: none
	// counted are the names of steering-metrics, whose answers are counted by owner, and
	// countedAt the line of that option; tally counts them once the stanza is read (nil: none).
	counted   []string
	countedAt string
	tally     *steer.Tally
}

// parse reads opt into s, if it is one of the steering options; at is its file and line.
func (s *steering) parse(opt string, args []string, at string) (known bool, err error) {
	if known, err = healthcheck.Options.Parse(&s.health, opt, args); known {
		s.healthAt = at
		return known, err
	}
	if known, err = steer.Options.Parse(&s.locality, opt, args); known {
		s.localityAt = at
		return known, err
	}
	if opt != "steering-metrics" {
		return false, nil
	}
	if len(args) == 0 {
		return true, fmt.Errorf("steering-metrics: want the names whose answers are counted by owner")
	}
	for _, a := range args {
		if _, ok := dns.IsDomainName(a); !ok || strings.Contains(a, "*") {
			return true, fmt.Errorf("steering-metrics: %q is not a name", a)
		}
		s.counted = append(s.counted, strings.ToLower(dns.Fqdn(a)))
	}
	s.countedAt = at
	return true, nil
}

// finish checks what the options say together, once the stanza is read: the error names the
// line of the option it is about, as the parser's errors do. The names counted must be in the
// stanza's zones, whose records are under prefix; server labels their series.
func (s *steering) finish(server, prefix string, zones []string) error {
	if len(s.counted) > 0 {
		names := map[string]string{}
		for _, n := range s.counted {
			if plugin.Zones(zones).Matches(n) == "" {
				return fmt.Errorf("%s - Error during parsing: steering-metrics: %s is in none of the zones %v", s.countedAt, n, zones)
			}
			names[record.NamePath(prefix, n)] = n
		}
		s.tally = steer.NewTally(names, func(name, owner string) steer.Counter {
			return steeringAnswers.WithLabelValues(server, name, owner)
		})
	}
	if err := s.health.Check(); err != nil {
		return fmt.Errorf("%s - Error during parsing: %v", s.healthAt, err)
	}
	loc, err := s.locality.Build()
	if err != nil {
		return fmt.Errorf("%s - Error during parsing: %v", s.localityAt, err)
	}
	if loc.Configured() {
		s.loc = loc
	}
	return nil
}
