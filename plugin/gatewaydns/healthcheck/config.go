// Package healthcheck runs the health checks that owners of a name declare
// (gatewaydns.io/health-check, shared/spec/steering.md) against each of their addresses, on
// the serving servers, beside the query path and never in it: tcp, http and https checks at an
// interval, each bounded by a timeout, an address going down after consecutive failures and up
// after consecutive successes. The serve role feeds it the (address, check) targets of the
// index's records with Set, and reads each target's state when it builds a name's answers;
// a change of state is told through a callback and a generation counter.
package healthcheck

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/option"
)

// Config is how the checks run. The zero value is filled with the defaults by New.
type Config struct {
	// Interval between two checks of one target (healthcheck-interval).
	Interval time.Duration
	// Timeout of one check: connect, and for http(s) the response's status line
	// (healthcheck-timeout). At most Interval, so that one target has one check in flight.
	Timeout time.Duration
	// DownAfter consecutive failures take a target down (healthcheck-down-after).
	DownAfter int
	// UpAfter consecutive successes bring a down target up again (healthcheck-up-after).
	UpAfter int
	// Concurrency bounds the checks in flight (healthcheck-concurrency): a worker pool of at
	// most this many goroutines. Checks beyond it start late (healthcheck_delay_seconds).
	Concurrency int
	// MetricsFor are the networks whose addresses get series of their own
	// (healthcheck-metrics); every other target is counted in the aggregates only.
	MetricsFor []netip.Prefix
}

// Defaults. A target that fails right after a passing check is seen failing by the next
// DownAfter checks, the last of which ends Timeout after it starts at the latest: it is down
// within DownAfter*Interval + Timeout = 1.4 s, inside the 2 s that steering.md asks for with
// room for a late scheduler; and back within UpAfter*Interval = 1 s of answering again. Two
// failures, not one, so that one lost SYN (retransmitted after 1 s, longer than the timeout)
// does not take a healthy address out; two successes, so that an address that answers once
// while it restarts does not come back to fail again. At 10,000 targets that is 20,000 checks
// a second; most take well under a millisecond, so the worker pool is rarely a tenth full,
// and 1024 workers keep intervals for some 1,300 black-holed targets (each holds a worker for
// the whole timeout, twice a second) before checks start late.
const (
	DefaultInterval    = 500 * time.Millisecond
	DefaultTimeout     = 400 * time.Millisecond
	DefaultDownAfter   = 2
	DefaultUpAfter     = 2
	DefaultConcurrency = 1024
)

// Limits of the options.
const (
	minInterval    = 50 * time.Millisecond
	maxInterval    = time.Hour
	maxThreshold   = 100
	maxConcurrency = 100000
)

// withDefaults is c with every unset field at its default.
func (c Config) withDefaults() Config {
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Timeout == 0 {
		c.Timeout = min(DefaultTimeout, c.Interval)
	}
	if c.DownAfter == 0 {
		c.DownAfter = DefaultDownAfter
	}
	if c.UpAfter == 0 {
		c.UpAfter = DefaultUpAfter
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	return c
}

// Check reports a combination of options that cannot run: a timeout longer than the interval.
// The single options are checked as they are read.
func (c Config) Check() error {
	c = c.withDefaults()
	if c.Timeout > c.Interval {
		return fmt.Errorf("healthcheck-timeout %s is longer than healthcheck-interval %s: one target would have two checks in flight", c.Timeout, c.Interval)
	}
	return nil
}

// DownWithin is the longest a target that stops answering can stay up: DownAfter checks, the
// last of which times out.
func (c Config) DownWithin() time.Duration {
	c = c.withDefaults()
	return time.Duration(c.DownAfter)*c.Interval + c.Timeout
}

// Options are the health checker's options in a Corefile stanza, for the serve role to hook in.
var Options = option.Table[*Config]{
	"healthcheck-interval": option.Word(func(c *Config, v string) (err error) {
		c.Interval, err = duration("healthcheck-interval", v, minInterval, maxInterval)
		return err
	}),
	"healthcheck-timeout": option.Word(func(c *Config, v string) (err error) {
		c.Timeout, err = duration("healthcheck-timeout", v, time.Millisecond, maxInterval)
		return err
	}),
	"healthcheck-down-after": option.Word(func(c *Config, v string) (err error) {
		c.DownAfter, err = count("healthcheck-down-after", v, maxThreshold)
		return err
	}),
	"healthcheck-up-after": option.Word(func(c *Config, v string) (err error) {
		c.UpAfter, err = count("healthcheck-up-after", v, maxThreshold)
		return err
	}),
	"healthcheck-concurrency": option.Word(func(c *Config, v string) (err error) {
		c.Concurrency, err = count("healthcheck-concurrency", v, maxConcurrency)
		return err
	}),
	"healthcheck-metrics": option.Words(func(c *Config, vs []string) error {
		for _, v := range vs {
			p, err := prefix(v)
			if err != nil {
				return fmt.Errorf("healthcheck-metrics: %w", err)
			}
			c.MetricsFor = append(c.MetricsFor, p)
		}
		return nil
	}),
}

func duration(opt, v string, lo, hi time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		return 0, fmt.Errorf("%s %q: want a duration %s..%s, e.g. 500ms", opt, v, lo, hi)
	}
	return d, nil
}

func count(opt, v string, hi int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > hi {
		return 0, fmt.Errorf("%s %q: want a whole number 1..%d", opt, v, hi)
	}
	return n, nil
}

// prefix reads a network ("10.0.0.0/8") or one address ("10.0.0.1", a /32 or /128).
func prefix(v string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(v); err == nil {
		return p.Masked(), nil
	}
	if a, err := netip.ParseAddr(v); err == nil {
		return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
	}
	return netip.Prefix{}, errors.New(strconv.Quote(v) + " is neither a network (10.0.0.0/8) nor an address")
}
