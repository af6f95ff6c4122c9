package gatewaydns

import (
	"net"
	"reflect"
	"slices"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/transfer"
)

// notifyTarget is where the NOTIFYs of one zone go: the transfer plugin's `to` addresses
// (host:port, without `*`) of its stanza for the zone, sent from its `source`, if any.
type notifyTarget struct {
	to     []string
	source net.IP
}

// notifyTargets reads, for each zone, what the transfer plugin's own Notify would send to. The
// plugin keeps its stanzas unexported, and its Notify cannot serve here: it sends to one
// secondary after another, 3 tries of 2 s each, so one that does not answer holds up the
// others, and the stanza's other zones, by 6 s. So they are read by reflection, read only (a
// test pins it to the plugin's setup), and sent to by the notifier itself. ok is false when the
// plugin's fields are not what this reads (another CoreDNS version): then the notifier falls
// back to the plugin's Notify.
func notifyTargets(t *transfer.Transfer, zones []string) (targets map[string]notifyTarget, ok bool) {
	v := reflect.ValueOf(t)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, false
	}
	xfrs := v.Elem().FieldByName("xfrs")
	if !xfrs.IsValid() || xfrs.Kind() != reflect.Slice {
		return nil, false
	}
	type stanza struct {
		zones  []string
		target notifyTarget
	}
	var stanzas []stanza
	for i := range xfrs.Len() {
		x := xfrs.Index(i)
		if x.Kind() != reflect.Pointer || x.IsNil() || x.Elem().Kind() != reflect.Struct {
			return nil, false
		}
		x = x.Elem()
		zs, to, source := x.FieldByName("Zones"), x.FieldByName("to"), x.FieldByName("source")
		if !isStrings(zs) || !isStrings(to) || !source.IsValid() || source.Type() != reflect.TypeFor[net.IP]() {
			return nil, false
		}
		s := stanza{zones: stringsOf(zs)}
		for _, addr := range stringsOf(to) {
			if addr != "*" {
				s.target.to = append(s.target.to, addr)
			}
		}
		if !source.IsNil() {
			s.target.source = slices.Clone(net.IP(source.Bytes()))
		}
		stanzas = append(stanzas, s)
	}
	targets = map[string]notifyTarget{}
	for _, zone := range zones {
		// The transfer plugin's choice (longestMatch): the longest matching zone, the greater
		// name of two as long.
		best, found := "", -1
		for i, s := range stanzas {
			z := plugin.Zones(s.zones).Matches(zone)
			if z != "" && (len(z) > len(best) || (len(z) == len(best) && z > best)) {
				best, found = z, i
			}
		}
		if found >= 0 && len(stanzas[found].target.to) > 0 {
			targets[zone] = stanzas[found].target
		}
	}
	return targets, true
}

func isStrings(v reflect.Value) bool {
	return v.IsValid() && v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String
}

// stringsOf copies a []string field, exported or not.
func stringsOf(v reflect.Value) []string {
	out := make([]string, v.Len())
	for i := range out {
		out[i] = v.Index(i).String()
	}
	return out
}
