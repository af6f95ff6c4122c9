package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/dnsperf"
	"github.com/gatewaydns/gatewaydns/internal/promtext"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/healthcheck"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// hResults: phase H, the health checker at -haddrs checked addresses beside the query path
// (issue 36: it holds its interval and costs the query path no measurable p99).
type hResults struct {
	addrs, names int
	interval     time.Duration // the checking server's, the default
	port         int           // of the check endpoint
	rounds       int
	perf         dnsperf.Options // of the latency runs
	baseQPS      float64         // the server without checks at saturation
	rate         int             // of the latency runs
	latFraction  float64
	// The latency runs: every round's questions, their latencies pooled, each round's.
	off, on             sample
	offLat, onLat       latencyStats
	offRounds, onRounds []latencyStats
	// What the servers did: the checking one alone (no queries) and while answering the
	// latency runs; the one without checks while answering them.
	alone, busy, base checkWindow
}

// healthPath is phase H's prefix in etcd; both of its servers read it.
const healthPath = "/benchh"

// phaseH: -haddrs/2 names of two owners (eu1, us1) with one address each, in 127.0.0.0/8,
// every owner declaring a tcp check of one port, which one listener of the harness serves for
// every address. Two servers of the same records, the same binary and the same Corefile but
// for one option: one checks at the default interval, the other at the longest there is (an
// hour: its targets stay unknown, which answers as up, through the same steered path). The
// rounds take turns: the one without checks answers a latency run (the checking one not
// running); the checking one starts, brings every address up, runs alone for a while and then
// answers the same latency run.
func (h *harness) phaseH() error {
	if h.clientCPU != "" {
		// The check endpoint's accepts run in the harness: on the client's CPU, beside
		// dnsperf, as an endpoint on another machine costs the server nothing.
		restore, err := pinHarness(h.clientCPU)
		if err != nil {
			return err
		}
		defer restore()
	}
	names := max(h.opt.haddrs/2, 1)
	ep, err := openCheckEndpoint()
	if err != nil {
		return err
	}
	defer ep.close()
	if err := ep.reaches(healthAddr(0, 0), healthAddr(1, names-1)); err != nil {
		return err
	}
	input, err := h.healthRecords(names, ep.port)
	if err != nil {
		return err
	}
	hr := &hResults{addrs: 2 * names, names: names, interval: healthcheck.DefaultInterval, port: ep.port,
		rounds: h.opt.rounds, latFraction: h.opt.latFraction}
	h.res.h = hr
	base, err := h.startHealthServer("health-off", "healthcheck-interval 1h")
	if err != nil {
		return err
	}
	defer base.stop()
	perfLog := filepath.Join(h.runDir, "dnsperf-H.log")
	qps, lp, err := h.latencyRate(base, input, perfLog)
	if err != nil {
		return err
	}
	lp.Duration = max(h.opt.duration/2, time.Second)
	hr.baseQPS, hr.rate, hr.perf = qps, lp.MaxQPS, lp
	logf("H: %d addresses of %d names on 0.0.0.0:%d; without checks %.0f qps, latency runs at %d qps", hr.addrs, names, ep.port, qps, hr.rate)
	without := func(r int) error {
		res, w, err := h.healthRun(base, ep, input, perfLog, lp, r == 0)
		if err != nil {
			return err
		}
		hr.base.add(w)
		hr.offRounds = append(hr.offRounds, hr.off.add(res, lp.Timeout))
		logf("H: round %d without checks: p99 %s, lost %d", r+1, ms(hr.offRounds[r].p99), res.Lost)
		return nil
	}
	with := func(r int) error { return h.healthRound(hr, r, ep, input, perfLog, lp) }
	if err := rotate(h.opt.rounds, without, with); err != nil {
		return err
	}
	hr.offLat, hr.onLat = summarize(hr.off.lat), summarize(hr.on.lat)
	logf("H: p99 %s with checks, %s without (%.2fx)", ms(hr.onLat.p99), ms(hr.offLat.p99), ratio(hr.onLat.p99, hr.offLat.p99))
	return nil
}

// healthRound is a round of the checking server: it starts, every address comes up, it runs
// alone for a latency run's length, and then answers the latency run (warmed up as the server
// without checks is); it stops after.
func (h *harness) healthRound(hr *hResults, r int, ep *checkEndpoint, input, perfLog string, lp dnsperf.Options) error {
	srv, err := h.startHealthServer(fmt.Sprintf("health-on-%d", r), "")
	if err != nil {
		return err
	}
	defer srv.stop()
	if err := h.waitAllUp(srv, ep, hr.addrs, 30*time.Second); err != nil {
		return err
	}
	s0, err := h.checkerSnapshot(srv, ep)
	if err != nil {
		return err
	}
	time.Sleep(lp.Duration) // a window of the checker alone, as long as the latency run
	s1, err := h.checkerSnapshot(srv, ep)
	if err != nil {
		return err
	}
	alone, err := between(srv, s0, s1)
	if err != nil {
		return err
	}
	res, busy, err := h.healthRun(srv, ep, input, perfLog, lp, r == 0)
	if err != nil {
		return err
	}
	hr.alone.add(alone)
	hr.busy.add(busy)
	hr.onRounds = append(hr.onRounds, hr.on.add(res, lp.Timeout))
	logf("H: round %d with checks: alone %.0f checks/s (%.2f CPU); answering %.0f checks/s, p99 delay %s, skipped %.0f, inconclusive %.0f, failed %.0f; p99 %s, lost %d",
		r+1, alone.rate(), alone.cpuShare(), busy.rate(), ms(busy.delayQuantile(0.99)), busy.skipped, busy.inconclusive, busy.failed, ms(hr.onRounds[len(hr.onRounds)-1].p99), res.Lost)
	return nil
}

// healthRun warms srv up at the latency run's rate for 2 s, then runs it: its result, and what
// srv's checker and its garbage collector did during the run. With -profile and profile, a CPU
// profile of srv over the run.
func (h *harness) healthRun(srv *coreDNS, ep *checkEndpoint, input, perfLog string, lp dnsperf.Options, profile bool) (dnsperf.Result, checkWindow, error) {
	warm := lp
	warm.Verbose, warm.Duration = false, min(2*time.Second, lp.Duration)
	if _, err := runDnsperf(warm, srv.DNS, input, perfLog); err != nil {
		return dnsperf.Result{}, checkWindow{}, srv.failure(err)
	}
	before, err := h.checkerSnapshot(srv, ep)
	if err != nil {
		return dnsperf.Result{}, checkWindow{}, err
	}
	profiled := h.profileRun(srv, lp.Duration, "latency", profile)
	res, err := runDnsperf(lp, srv.DNS, input, perfLog)
	if err != nil {
		return res, checkWindow{}, srv.failure(err)
	}
	if err := profiled(); err != nil {
		return res, checkWindow{}, err
	}
	after, err := h.checkerSnapshot(srv, ep)
	if err != nil {
		return res, checkWindow{}, err
	}
	w, err := between(srv, before, after)
	return res, w, err
}

// between is what srv did from one snapshot to the next, its garbage collections included.
func between(srv *coreDNS, before, after checkerSnapshot) (checkWindow, error) {
	w := after.since(before)
	cycles, err := gcCycles(srv.Log)
	if err != nil {
		return w, err
	}
	w.gcIn(cycles, before.at.Sub(srv.started), after.at.Sub(srv.started))
	return w, nil
}

// startHealthServer starts a server of phase H's records, with the prometheus plugin and a
// gctrace, pinned to the server's CPU, with one more stanza option (or none), and checks that
// it answers the first name's two owners.
func (h *harness) startHealthServer(name, option string) (*coreDNS, error) {
	body := fmt.Sprintf("gatewaydns {\n    endpoint %s\n    path %s\n    %s\n}", h.etcd.ClientURL, healthPath, option)
	srv, _, err := h.start(serverSpec{name: name, body: body, cpu: h.serverCPU, metrics: true, pprof: h.opt.profile, env: []string{gcTraceEnv}}, 60*time.Second)
	if err != nil {
		return nil, err
	}
	if err := checkSteered(srv, false); err != nil {
		srv.stop()
		return nil, srv.failure(err)
	}
	return srv, nil
}

// waitAllUp polls srv's metrics until n targets are up.
func (h *harness) waitAllUp(srv *coreDNS, ep *checkEndpoint, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		s, err := h.checkerSnapshot(srv, ep)
		if err == nil && s.up >= float64(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return srv.failure(fmt.Errorf("%v after its start, %.0f of %d checked addresses up (%v)", timeout, s.up, n, err))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkerSnapshot scrapes srv's checker metrics and reads its CPU time, its CPU's counters and
// the endpoint's accepts.
func (h *harness) checkerSnapshot(srv *coreDNS, ep *checkEndpoint) (checkerSnapshot, error) {
	text, err := promtext.Scrape(nil, srv.metricsURL)
	at := time.Now()
	if err != nil {
		return checkerSnapshot{}, srv.failure(err)
	}
	s, err := parseChecker(text)
	if err != nil {
		return s, srv.failure(err)
	}
	s.at, s.accepted = at, ep.accepted.Load()
	if s.serverCPU, err = cpuTime(srv.pid()); err != nil {
		return s, err
	}
	s.cpu, err = readCPUStat(h.serverCPU)
	return s, err
}

// healthRecords writes phase H's records into etcd, in place of any, and the questions of
// their names into the run directory: the file's path.
func (h *harness) healthRecords(names, port int) (input string, err error) {
	ctx, cancel := h.ctx()
	defer cancel()
	if err := clearPrefix(ctx, h.cli, healthPath+"/"); err != nil {
		return "", err
	}
	if err := loadRecords(ctx, h.cli, healthRecordSet(names, port), 8); err != nil {
		return "", err
	}
	input = filepath.Join(h.runDir, "queries-health.txt")
	return input, os.WriteFile(input, []byte(steeringQueries(names)), 0o644)
}

// healthRecordSet is names (the names of phase T's questions) of two owners, eu1 and us1, with
// one address each, every owner declaring a tcp check of port.
func healthRecordSet(names, port int) []kv {
	prefix := strings.TrimPrefix(healthPath, "/")
	steering := fmt.Sprintf(`{"healthCheck":"tcp://:%d"}`, port)
	out := make([]kv, 0, 2*names)
	for i := range names {
		name := fmt.Sprintf("n%d.t.%s", i, strings.TrimSuffix(zone, "."))
		for o, owner := range []string{"eu1", "us1"} {
			host := healthAddr(o, i)
			out = append(out, kv{Key: record.Key(prefix, name, owner, host),
				Value: fmt.Sprintf(`{"host":%q,"owner":%q,"steering":%s}`, host, owner, steering)})
		}
	}
	return out
}

// maxHealthNames is how many names healthAddr has addresses for.
const maxHealthNames = 254 * 250

// healthAddr is the address of owner o (0 or 1) of name i < maxHealthNames: 127.1.x.y for eu1,
// 127.2.x.y for us1, no octet 0 or 255.
func healthAddr(o, i int) string {
	return fmt.Sprintf("127.%d.%d.%d", 1+o, i/250, 1+i%250)
}

// checkEndpoint is the listener that every checked address's tcp check reaches. Bound to
// 0.0.0.0, it takes connections to any 127.x.y.z (Linux routes all of 127.0.0.0/8 to lo; a
// socket bound to 127.0.0.1 takes only that one), so 10,000 addresses cost one socket. One
// goroutine accepts and closes each connection with blocking system calls: 20,000 connections
// a second, none of them registered with Go's poller (a listener's SyscallConn cannot wait),
// at the least CPU an endpoint can take (an endpoint on another machine costs the server
// nothing).
type checkEndpoint struct {
	fd       int
	port     int
	accepted atomic.Int64
	done     chan error // the error that ended the accepts
}

func openCheckEndpoint() (*checkEndpoint, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the check endpoint: %w", err)
	}
	sa, err := func() (syscall.Sockaddr, error) {
		if err := syscall.Bind(fd, &syscall.SockaddrInet4{}); err != nil {
			return nil, err
		}
		// A backlog of 4096: the kernel caps it at net.core.somaxconn.
		if err := syscall.Listen(fd, 4096); err != nil {
			return nil, err
		}
		return syscall.Getsockname(fd)
	}()
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("the check endpoint: %w", err)
	}
	e := &checkEndpoint{fd: fd, port: sa.(*syscall.SockaddrInet4).Port, done: make(chan error, 1)}
	go func() {
		for {
			nfd, _, err := syscall.Accept4(fd, syscall.SOCK_CLOEXEC)
			switch {
			case err == nil:
				syscall.Close(nfd)
				e.accepted.Add(1)
			case errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EINTR):
				// reset by the checker before it was accepted: the next
			default:
				e.done <- err // EINVAL after close's shutdown
				return
			}
		}
	}()
	return e, nil
}

// reaches connects to the endpoint's port on each of addrs.
func (e *checkEndpoint) reaches(addrs ...string) error {
	for _, a := range addrs {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(a, fmt.Sprint(e.port)), 2*time.Second)
		if err != nil {
			return fmt.Errorf("the check endpoint on 0.0.0.0:%d takes no connection to %s (phase H needs every address of 127.0.0.0/8 on lo, as Linux has it): %w", e.port, a, err)
		}
		c.Close()
	}
	return nil
}

// close stops the accepts (a shutdown wakes the blocked accept) and closes the socket.
func (e *checkEndpoint) close() {
	_ = syscall.Shutdown(e.fd, syscall.SHUT_RDWR)
	<-e.done
	syscall.Close(e.fd)
}
