package batchrun

import (
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/coredns/coredns/plugin/metrics/vars"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/udpbatch"
)

// server is what the batched path answers on one CoreDNS server: the stanza's zones that
// the server routes to its server block alone.
type server struct {
	st    Stanza
	zones []string
	// below are zones of other server blocks inside those: the server routes their names to
	// those blocks, and so does the path.
	below   []string
	metrics *requestMetrics // nil without prometheus in the server block
	// shuffle: loadbalance is in front, and the path shuffles what it would (replies of
	// addresses); replies of other records are its to shuffle, and go to the server.
	shuffle bool
	// blockZones are the server block's zones, by which the prometheus plugin labels a
	// question (the longest that holds its name).
	blockZones []string
}

// served is what the path answers on s, which serves zones (configurations by address).
func (r *Run) served(s interface{ Address() string }, zones map[string][]uintptr) *server {
	own := func(cfgs []uintptr) bool {
		if len(cfgs) != 1 {
			return false // views or another block of the same zone: the server chooses
		}
		for _, c := range r.configs {
			if configKey(c) == cfgs[0] {
				return true
			}
		}
		return false
	}
	sv := &server{st: r.st, blockZones: r.blockZones, shuffle: r.shuffle}
	for _, z := range r.st.Zones {
		// The server routes z's names to the block of the longest of its zones above z.
		route := ""
		for sz := range zones {
			if len(sz) > len(route) && (sz == "." || z == sz || strings.HasSuffix(z, "."+sz)) {
				route = sz
			}
		}
		if route == "" || !own(zones[route]) {
			continue
		}
		sv.zones = append(sv.zones, z)
		for sz, cfgs := range zones {
			if sz != z && strings.HasSuffix(sz, "."+z) && !own(cfgs) {
				sv.below = append(sv.below, sz)
			}
		}
	}
	if r.metrics {
		sv.metrics = &requestMetrics{server: s.Address(), zones: map[string]*zoneMetrics{".": {}}}
		for _, z := range r.blockZones {
			sv.metrics.zones[z] = &zoneMetrics{}
		}
	}
	return sv
}

// reply is the path's udpbatch.Config.Answer: the packed reply to a plain question of one of
// the zones, with the server's metrics of it; false for anything the server is to answer.
func (sv *server) reply(uq *udpbatch.Question, dst []byte) ([]byte, bool) {
	if len(uq.Name) == 0 {
		return dst, false
	}
	name := unsafe.String(&uq.Name[0], len(uq.Name)) // the reader's buffer: not kept past the answer
	zone := answer.MatchZone(sv.zones, name)
	if zone == "" {
		return dst, false
	}
	for _, b := range sv.below {
		if name == b || strings.HasSuffix(name, "."+b) {
			return dst, false
		}
	}
	out, nx, ok := sv.st.Answer(dst, &uq.Query, name, zone, uq.From, sv.shuffle)
	if !ok {
		return dst, false
	}
	if sv.metrics != nil {
		label := answer.MatchZone(sv.blockZones, name)
		if label == "" {
			label = "."
		}
		sv.metrics.report(label, uq, nx, len(out))
	}
	return out, true
}

// requestMetrics are CoreDNS's request metrics (plugin/metrics/vars) of what the path answers,
// as the prometheus plugin counts the questions the server answers: by server, zone (the
// stanza's, which the server block's is), protocol and family, type, rcode, with
// gatewaydns as the plugin that wrote the reply. Their series are made on first use, as the
// plugin makes them, and kept: one WithLabelValues per question would cost more than the rest.
type requestMetrics struct {
	server string
	zones  map[string]*zoneMetrics // read-only once made
}

type zoneMetrics struct {
	requests           [2][len(monitoredTypes) + 1]lazy[prometheus.Counter] // by family and type
	rcodes             [2]lazy[prometheus.Counter]                          // NOERROR, NXDOMAIN
	do                 lazy[prometheus.Counter]
	duration, req, rsp lazy[prometheus.Observer]
}

// lazy is a metric's series, made once.
type lazy[T any] struct{ p atomic.Pointer[T] }

func (l *lazy[T]) get(make func() T) T {
	if p := l.p.Load(); p != nil {
		return *p
	}
	t := make()
	l.p.Store(&t)
	return t
}

// monitoredTypes are the types plugin/metrics/vars counts by name; every other is "other".
var monitoredTypes = [...]uint16{dns.TypeAAAA, dns.TypeA, dns.TypeCNAME, dns.TypeDNSKEY, dns.TypeDS, dns.TypeMX, dns.TypeNSEC3,
	dns.TypeNSEC, dns.TypeNS, dns.TypePTR, dns.TypeRRSIG, dns.TypeSOA, dns.TypeSRV, dns.TypeTXT, dns.TypeHTTPS, dns.TypeSVCB,
	dns.TypeIXFR, dns.TypeAXFR, dns.TypeANY}

func typeSlot(qtype uint16) (int, string) {
	for i, t := range monitoredTypes {
		if t == qtype {
			return i, dns.Type(qtype).String()
		}
	}
	return len(monitoredTypes), "other"
}

// report counts one answered question of zone, as vars.Report does.
func (m *requestMetrics) report(zone string, uq *udpbatch.Question, nxdomain bool, size int) {
	z := m.zones[zone]
	const view, proto = "", "udp"
	fam, family := 0, "1"
	if uq.Query.Family == 2 {
		fam, family = 1, "2"
	}
	if uq.Query.OPT && uq.Query.OPTTTL&(1<<15) != 0 {
		z.do.get(func() prometheus.Counter { return vars.RequestDo.WithLabelValues(m.server, zone, view) }).Inc()
	}
	i, qtype := typeSlot(uq.Query.Qtype)
	z.requests[fam][i].get(func() prometheus.Counter {
		return vars.RequestCount.WithLabelValues(m.server, zone, view, proto, family, qtype)
	}).Inc()
	z.duration.get(func() prometheus.Observer { return vars.RequestDuration.WithLabelValues(m.server, zone, view) }).Observe(time.Since(uq.Read).Seconds())
	z.rsp.get(func() prometheus.Observer { return vars.ResponseSize.WithLabelValues(m.server, zone, view, proto) }).Observe(float64(size))
	z.req.get(func() prometheus.Observer { return vars.RequestSize.WithLabelValues(m.server, zone, view, proto) }).Observe(float64(uq.Len))
	rc, rcode := 0, "NOERROR"
	if nxdomain {
		rc, rcode = 1, "NXDOMAIN"
	}
	z.rcodes[rc].get(func() prometheus.Counter {
		return vars.ResponseRcode.WithLabelValues(m.server, zone, view, rcode, pluginName)
	}).Inc()
}
