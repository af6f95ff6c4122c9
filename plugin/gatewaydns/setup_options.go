// The options of the stanza as a whole and of its serve role: where etcd is and how to reach
// it, how records are answered, the apex. The publish role's are package publish's, those of
// zone transfers and NOTIFYs package xfr's; setup.go tries each table in turn.

package gatewaydns

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	mwtls "github.com/coredns/coredns/plugin/pkg/tls"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/batchrun"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/option"
)

// serveOptions are the options of the serve role and of the stanza as a whole: where etcd is
// and how to reach it, how records are answered, and the apex: the stock etcd plugin's, and
// gatewaydns's own.
var serveOptions = option.Table[*config]{
	"endpoint": func(cfg *config, _ string, args []string) error {
		if len(args) == 0 {
			return errors.New("endpoint needs at least one URL")
		}
		cfg.etcd.Endpoints = args
		return nil
	},
	"path": option.Word(func(cfg *config, v string) error { cfg.prefix = v; return nil }),
	"credentials": func(cfg *config, _ string, args []string) error {
		if len(args) != 2 {
			return errors.New("credentials needs 2 arguments, username and password")
		}
		cfg.etcd.Username, cfg.etcd.Password = args[0], args[1]
		return nil
	},
	"tls":           parseTLS,
	"fallthrough":   func(cfg *config, _ string, args []string) error { cfg.fall = append([]string{}, args...); return nil },
	"min-lease-ttl": leaseTTL(func(cfg *config, ttl uint32) { cfg.minLeaseTTL = ttl }),
	"max-lease-ttl": leaseTTL(func(cfg *config, ttl uint32) { cfg.maxLeaseTTL = ttl }),
	"lease-grace": func(cfg *config, _ string, args []string) error {
		if len(args) != 1 {
			return errors.New("lease-grace needs exactly one duration")
		}
		d, err := time.ParseDuration(args[0])
		if err != nil || d < 0 {
			return fmt.Errorf("invalid lease-grace %q: a duration such as 5s, or 0 to delete at once", args[0])
		}
		cfg.leaseGrace = d
		return nil
	},
	"negative-ttl": func(cfg *config, _ string, args []string) error {
		if len(args) != 1 {
			return errors.New("negative-ttl needs exactly one duration")
		}
		if err := setNegativeTTL(args[0], cfg); err != nil {
			return fmt.Errorf("invalid negative-ttl %q: %w", args[0], err)
		}
		return nil
	},
	"soa": func(cfg *config, _ string, args []string) error {
		return answer.ParseSOA(args, cfg.apex, func(v string) error { return setNegativeTTL(v, cfg) })
	},
	"nameserver": func(cfg *config, _ string, args []string) error {
		return answer.ParseNameserver(args, cfg.apex, cfg.zones)
	},
	"publish-only":     option.Flag(func(cfg *config) { cfg.publishOnly = true }),
	"exact-names":      option.Flag(func(cfg *config) { cfg.exactNames = true }),
	"explain":          option.Flag(func(cfg *config) { cfg.explain = true }),
	"no_apex_fallback": option.Flag(func(cfg *config) { cfg.noApexFallback = true }),
	"udp-batch":        parseBatch,
	// Accepted and ignored, as the stock etcd plugin does, so its Corefiles keep working.
	"stubzones": ignored,
	"debug":     ignored,
	"upstream":  ignored,
}

// parseTLS reads tls [CERT KEY [CACERT]], relative names from the server block's root, and
// keeps the files' content, so that a rotated certificate is a new configuration.
func parseTLS(cfg *config, _ string, args []string) error {
	for i := range args {
		if !filepath.IsAbs(args[i]) && cfg.root != "" {
			args[i] = filepath.Join(cfg.root, args[i])
		}
	}
	tc, err := mwtls.NewTLSConfigFromArgs(args...)
	if err != nil {
		return fmt.Errorf("tls: %v", err)
	}
	cfg.etcd.TLS = tc
	cfg.etcdTLSFiles = nil
	for _, f := range args {
		b, err := os.ReadFile(filepath.Clean(f))
		if err != nil {
			return fmt.Errorf("tls: %v", err)
		}
		cfg.etcdTLSFiles = append(cfg.etcdTLSFiles, b...)
	}
	return nil
}

// leaseTTL reads min-lease-ttl or max-lease-ttl.
func leaseTTL(set func(cfg *config, ttl uint32)) option.Func[*config] {
	return func(cfg *config, opt string, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("%s needs exactly one duration", opt)
		}
		ttl, err := option.TTL(args[0], 0, math.MaxUint32)
		if err != nil {
			return fmt.Errorf("invalid %s %q: %v", opt, args[0], err)
		}
		set(cfg, ttl)
		return nil
	}
}

// parseBatch reads "udp-batch [on|off]": the batched UDP path (package batchrun) on, the default where
// nothing in front of gatewaydns must see each question, or off.
func parseBatch(cfg *config, _ string, args []string) error {
	switch {
	case len(args) == 0 || len(args) == 1 && args[0] == "on":
		cfg.batch = batchrun.On
	case len(args) == 1 && args[0] == "off":
		cfg.batch = batchrun.Off
	default:
		return fmt.Errorf("udp-batch takes on or off, not %q", strings.Join(args, " "))
	}
	return nil
}

func ignored(_ *config, opt string, _ []string) error {
	log.Warningf("Option %q is ignored, as in the stock etcd plugin", opt)
	return nil
}

// setNegativeTTL sets the SOA minimum, given as negative-ttl or as soa minimum: once.
func setNegativeTTL(value string, cfg *config) error {
	if cfg.negativeTTLSet {
		return errors.New("given twice (negative-ttl and soa minimum are the same field)")
	}
	ttl, err := option.TTL(value, 0, math.MaxUint32)
	if err == nil && ttl > index.MaxNegativeTTL {
		// Said in words rather than as option.TTL's range: why the bound is what it is.
		err = fmt.Errorf("at most %ds: CoreDNS gives the SOA record a TTL of at most that, and resolvers cache a negative answer for the smaller of the two", index.MaxNegativeTTL)
	}
	if err != nil {
		return err
	}
	cfg.negativeTTL, cfg.negativeTTLSet = ttl, true
	return nil
}
