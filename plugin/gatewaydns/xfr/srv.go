package xfr

import (
	"cmp"
	"math"
	"slices"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// appendPlainSRV appends the SRV records plugin.SRV answers for name when every one of its
// services is an address (index.Zone.Plain): the same weights, shared out per priority, the
// same targets and ports, a target and port once, a service with port -1 left out. A transfer
// makes them for nearly every name, and plugin.SRV spends most of its work and allocations on
// what a transfer drops (the targets' address records, two maps per call): half the garbage a
// transfer of 100k names made, and garbage collection is what delays the queries answered
// meanwhile. TestPlainSRVIsWhatPluginSRVAnswers holds the two equal.
func appendPlainSRV(dst []dns.RR, name string, services []msg.Service) []dns.RR {
	weights := srvWeightsOf(services, func(msg.Service) bool { return true })
	// plugin.SRV's duplicate check: a target and port once. A scan of the records made so far
	// for a name with few of them, a map for one that many writers share.
	type targetPort struct {
		target string
		port   uint16
	}
	var seen map[targetPort]bool
	if len(services) > scanSRV {
		seen = make(map[targetPort]bool, len(services))
	}
	start := len(dst)
	for i := range services {
		serv := services[i]
		if serv.Port == -1 {
			continue
		}
		weight := weights.of(serv)
		target, ok := record.TargetNameOf(serv.Key, serv.TargetStrip, name)
		if !ok {
			target = record.TargetName(serv.Key, serv.TargetStrip)
		}
		srv := &dns.SRV{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: serv.TTL},
			Priority: uint16(serv.Priority), Weight: weight, Port: uint16(serv.Port), Target: target} // #nosec G115 -- as msg.Service.NewSRV
		if seen != nil {
			k := targetPort{srv.Target, srv.Port}
			if seen[k] {
				continue
			}
			seen[k] = true
		} else if seenSRV(dst[start:], srv.Target, srv.Port) {
			continue
		}
		dst = append(dst, srv)
	}
	return dst
}

// srvWeights are the weights of a name's services with a port, added up per priority as
// plugin.SRV does, so that each SRV record's weight is its share of its priority's: the one
// rule for the synthetic and the published transfer. A name has few priorities.
type srvWeights []priorityWeight

type priorityWeight struct{ priority, total int }

// srvWeightsOf adds up the weights of the services that take part.
func srvWeightsOf(services []msg.Service, takesPart func(msg.Service) bool) srvWeights {
	var w srvWeights
	for _, s := range services {
		if !takesPart(s) {
			continue
		}
		i := slices.IndexFunc(w, func(t priorityWeight) bool { return t.priority == s.Priority })
		if i < 0 {
			i = len(w)
			w = append(w, priorityWeight{priority: s.Priority})
		}
		w[i].total += cmp.Or(s.Weight, 100)
	}
	return w
}

// of is the weight of s's SRV record: plugin.SRV's 100 / total * weight, at least 1.
func (w srvWeights) of(s msg.Service) uint16 {
	total := w[slices.IndexFunc(w, func(t priorityWeight) bool { return t.priority == s.Priority })].total
	return max(uint16(math.Floor(100.0/float64(total)*float64(cmp.Or(s.Weight, 100)))), 1)
}

// scanSRV is the most services whose SRV records appendPlainSRV checks for duplicates by a scan.
const scanSRV = 16

// seenSRV reports whether rrs (SRV records) hold target and port already.
func seenSRV(rrs []dns.RR, target string, port uint16) bool {
	for _, rr := range rrs {
		if s := rr.(*dns.SRV); s.Target == target && s.Port == port {
			return true
		}
	}
	return false
}
