package gatewaydns

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/coredns/coredns/plugin/etcd/msg"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/option"
)

// parseTransferOption reads the options of the apex (soa, nameserver) and of zone transfers
// (transfer-synthetic, notify, notify-source, notify-key).
func parseTransferOption(opt string, args []string, cfg *config) error {
	switch opt {
	case "soa":
		return parseSOA(args, cfg.apex, cfg)
	case "nameserver":
		return parseNameserver(args, cfg.apex, cfg.zones)
	case "transfer-synthetic":
		if len(args) != 0 {
			return errors.New("transfer-synthetic takes no arguments")
		}
		cfg.transferSynthetic = true
		return nil
	}
	return parseNotify(opt, args, &cfg.notify)
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

// zoneKeyPrefixes are the key prefixes of zones, one each, nested ones too: each zone's serial.
func zoneKeyPrefixes(prefix string, zones []string) []string {
	out := make([]string, 0, len(zones))
	for _, z := range zones {
		out = append(out, strings.TrimSuffix(msg.Path(z, prefix), "/")+"/")
	}
	return out
}
