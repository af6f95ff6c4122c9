package main

import (
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/freeport"
	"github.com/gatewaydns/gatewaydns/internal/promtext"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
)

// Phase I across restarts (issue 39): gatewaydns with -rnames names under its own prefix, Knot
// and NSD as its secondaries, listed once, in the transfer plugin's `to`. The replica restarts
// while a name is added; then a second replica joins on the same address (CoreDNS listens with
// SO_REUSEPORT, so the kernel spreads the secondaries over both, as a Service does), and the two
// restart one after the other, a name added while each is down; after each restart and after
// one more change, both secondaries follow. The figures: how long they took, an IXFR asked from
// the serial they held before (a probe: they asked for the same), the transfers the running
// replicas counted by kind, and the AXFRs in Knot's log.

// iRestarts are the figures of the restarts.
type iRestarts struct {
	names     int
	load      time.Duration // writing the records into etcd
	bootstrap time.Duration // the server's start to both secondaries holding the zone
	steps     []iStep
	knotAXFRs int // AXFRs Knot took after its first (its log)
	knotIXFRs int
}

// iStep is one restart or change, and what followed it.
type iStep struct {
	what     string
	from, to uint32        // the secondaries' serial before, and after
	caughtUp time.Duration // from the server's readiness, or the change, to both secondaries at to
	probe    iProbe        // an IXFR from `from`
	kinds    map[string]float64
}

// iProbe is an IXFR as a secondary reads it: its records, SOAs aside, and its shape.
type iProbe struct {
	moved, soas int
	bytes       int64
	incremental bool
}

// restartSet is the replicas on one address and their secondaries.
type restartSet struct {
	h        *harness
	spec     serverSpec
	replicas [2]*coreDNS
	starts   int
	secs     []*secondaryProc
	secPorts []int
	path     string
	added    int // names added so far
}

func (h *harness) ixfrAcrossRestarts(names int) (*iRestarts, error) {
	path := fmt.Sprintf("benchr%d", names)
	_, loaded, err := h.loadDataset(path, recordsForNames(names))
	if err != nil {
		return nil, err
	}
	defer h.clearDataset(path)
	res := &iRestarts{names: names, load: loaded}
	set, err := h.newRestartSet(path)
	if err != nil {
		return res, err
	}
	defer set.stop()
	start := time.Now()
	if err := set.startReplica(0); err != nil {
		return res, err
	}
	if set.secs, err = h.startSecondaries(set.replicas[0], set.secPorts); err != nil {
		return res, err
	}
	res.bootstrap = time.Since(start)
	logf("I: %d names; Knot and NSD hold the zone %v after the server's start", names, res.bootstrap.Round(time.Millisecond))
	if res.steps, err = set.run(); err != nil {
		return res, err
	}
	res.knotAXFRs, res.knotIXFRs = knotTransfers(set.secs[0].Log)
	res.knotAXFRs-- // its first
	return res, nil
}

// run makes the restarts and changes, and returns their figures.
func (s *restartSet) run() ([]iStep, error) {
	var steps []iStep
	for _, step := range []func() (iStep, error){
		func() (iStep, error) { return s.restart(0, "the replica restarts, a name added while it is down") },
		func() (iStep, error) { return s.change("then one more change") },
		func() (iStep, error) { return iStep{}, s.startReplica(1) },
		func() (iStep, error) {
			return s.restart(0, "rolling restart, the first replica, a name added while it is down")
		},
		func() (iStep, error) {
			return s.restart(1, "rolling restart, the second replica, a name added while it is down")
		},
		func() (iStep, error) { return s.change("then one more change") },
	} {
		st, err := step()
		if err != nil {
			return steps, err
		}
		if st.what == "" {
			continue
		}
		steps = append(steps, st)
		logf("I: %s: serial %d -> %d, both secondaries at it after %v; IXFR from %d: %d records + %d SOAs, incremental %v; the replicas counted: %s",
			st.what, st.from, st.to, st.caughtUp.Round(time.Millisecond), st.from, st.probe.moved, st.probe.soas, st.probe.incremental, kindsString(st.kinds))
	}
	return steps, nil
}

func (h *harness) clearDataset(path string) {
	ctx, cancel := h.ctx()
	defer cancel()
	if err := clearPrefix(ctx, h.cli, "/"+path+"/"); err != nil {
		logf("I: %v", err)
	}
}

func (h *harness) newRestartSet(path string) (*restartSet, error) {
	ports, err := freeport.Take(3)
	if err != nil {
		return nil, err
	}
	body := fmt.Sprintf("transfer {\n    to 127.0.0.1:%d 127.0.0.1:%d\n}\ngatewaydns {\n    endpoint %s\n    path /%s\n}",
		ports[1], ports[2], h.etcd.ClientURL, path)
	return &restartSet{h: h, path: path, secPorts: ports[1:],
		spec: serverSpec{name: "gatewaydns-restarts", cpu: h.serverCPU, metrics: true, port: ports[0], body: body}}, nil
}

// startReplica starts replica i on the set's address and waits until it is ready.
func (s *restartSet) startReplica(i int) error {
	s.starts++
	spec := s.spec
	spec.name = fmt.Sprintf("%s-%d-%d", spec.name, i, s.starts)
	c, _, err := s.h.start(spec, 5*time.Minute)
	s.replicas[i] = c
	return err
}

// restart stops replica i, adds a name, starts the replica again, and waits for the
// secondaries.
func (s *restartSet) restart(i int, what string) (iStep, error) {
	from, err := waitSynced(s.spec.addr(), s.secs, time.Minute)
	if err != nil {
		return iStep{}, err
	}
	s.replicas[i].stop()
	s.replicas[i] = nil
	if err := s.addName(); err != nil {
		return iStep{}, err
	}
	if err := s.startReplica(i); err != nil {
		return iStep{}, err
	}
	return s.follow(what, from, time.Now())
}

// change adds a name with every replica running, and waits for the secondaries.
func (s *restartSet) change(what string) (iStep, error) {
	from, err := waitSynced(s.spec.addr(), s.secs, time.Minute)
	if err != nil {
		return iStep{}, err
	}
	changed := time.Now()
	if err := s.addName(); err != nil {
		return iStep{}, err
	}
	return s.follow(what, from, changed)
}

// follow waits until the secondaries hold the server's serial, then probes the IXFR from
// their serial before and reads the replicas' counts.
func (s *restartSet) follow(what string, from uint32, since time.Time) (iStep, error) {
	st := iStep{what: what, from: from}
	if err := waitServerAfter(s.spec.addr(), from, time.Minute); err != nil {
		return st, err
	}
	var err error
	if st.to, err = waitSynced(s.spec.addr(), s.secs, time.Minute); err != nil {
		return st, err
	}
	st.caughtUp = time.Since(since)
	if st.probe, err = probeIXFR(s.spec.addr(), from); err != nil {
		return st, err
	}
	st.kinds = map[string]float64{}
	for _, r := range s.replicas {
		if r == nil {
			continue
		}
		text, err := promtext.Scrape(nil, r.metricsURL)
		if err != nil {
			return st, err
		}
		for _, kind := range transferKinds {
			if v, _ := promtext.Sum(text, `coredns_gatewaydns_transfers_total{kind="`+kind+`"}`); v > 0 {
				st.kinds[kind] += v
			}
		}
	}
	return st, nil
}

// addName adds a name with one address, under the set's prefix: one record to move.
func (s *restartSet) addName() error {
	s.added++
	ctx, cancel := s.h.ctx()
	defer cancel()
	key := msg.Path(fmt.Sprintf("r%d.restarts.%s", s.added, zone), "/"+s.path) + "/3e6bee2e"
	_, err := s.h.cli.Put(ctx, key, fmt.Sprintf(`{"host":"192.0.2.%d"}`, s.added))
	return err
}

func (s *restartSet) stop() {
	for _, r := range s.replicas {
		if r != nil {
			r.stop()
		}
	}
	for _, sec := range s.secs {
		sec.stop()
	}
}

// waitServerAfter waits until server answers a serial after from: the change is in.
func waitServerAfter(server string, from uint32, timeout time.Duration) error {
	client := &dns.Client{Net: "udp", Timeout: 200 * time.Millisecond}
	for deadline := time.Now().Add(timeout); ; time.Sleep(2 * time.Millisecond) {
		s, err := soaSerial(client, server)
		if err == nil && index.SerialAfter(s, from) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: the serial did not move from %d within %v (%v)", server, from, timeout, err)
		}
	}
}

// probeIXFR asks server for an IXFR from serial and reads its shape.
func probeIXFR(server string, serial uint32) (iProbe, error) {
	var p iProbe
	m := new(dns.Msg)
	m.SetIxfr(dns.Fqdn(zone), serial, "ns.dns."+dns.Fqdn(zone), "hostmaster."+dns.Fqdn(zone))
	n := 0
	wire, err := xfrIn(server, m, func(rr dns.RR) {
		n++
		soa, isSOA := rr.(*dns.SOA)
		switch {
		case !isSOA:
			p.moved++
		default:
			p.soas++
			p.incremental = p.incremental || n == 2 && soa.Serial == serial
		}
	})
	p.bytes = wire.bytes
	return p, err
}

var (
	knotAXFR = regexp.MustCompile(`AXFR, incoming, remote \S+, started`)
	knotIXFR = regexp.MustCompile(`IXFR, incoming, remote \S+, started`)
	// An IXFR answered with the whole zone counts as an AXFR.
	knotAXFRStyle = regexp.MustCompile(`AXFR-style IXFR`)
)

// knotTransfers counts the AXFRs and IXFRs Knot's log shows it took.
func knotTransfers(log string) (axfrs, ixfrs int) {
	text, err := os.ReadFile(log) // #nosec G304 -- the run directory's own log
	if err != nil {
		return 0, 0
	}
	axfrs = len(knotAXFR.FindAll(text, -1)) + len(knotAXFRStyle.FindAll(text, -1))
	return axfrs, len(knotIXFR.FindAll(text, -1))
}
