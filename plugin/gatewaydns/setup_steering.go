// The steering options of the serve role (shared/spec/steering.md): how this server's health
// checks run (package healthcheck's table) and where its clients are (package steer's
// locality and steering-metrics tables). They are tried after the serve role's and the
// transfers' own.

package gatewaydns

import (
	"fmt"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/healthcheck"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/steer"
)

// steering is what a stanza's steering options say.
type steering struct {
	health     healthcheck.Config
	healthAt   string // the file and line of the last healthcheck option, for Check's error
	locality   steer.LocalityConfig
	localityAt string          // the file and line of the last locality option, for Build's error
	loc        *steer.Locality // built from locality once the stanza is read; nil: none
	// counted is the steering-metrics option, and countedAt its line; tally counts the
	// answers of its names once the stanza is read (nil: none).
	counted   steer.TallyConfig
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
	if known, err = steer.TallyOptions.Parse(&s.counted, opt, args); known {
		s.countedAt = at
	}
	return known, err
}

// finish checks what the options say together, once the stanza is read: the error names the
// line of the option it is about, as the parser's errors do. The names counted must be in the
// stanza's zones, whose records are under prefix; server labels their series.
func (s *steering) finish(server, prefix string, zones []string) error {
	tally, err := s.counted.Build(server, prefix, zones)
	if err != nil {
		return fmt.Errorf("%s - Error during parsing: %v", s.countedAt, err)
	}
	s.tally = tally
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
