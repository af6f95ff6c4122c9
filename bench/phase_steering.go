package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/benchdata"
)

// tResults: phase T, the query throughput of names with a steering policy on every one against
// the same names without (issue 36: at least 0.9x).
type tResults struct {
	names   int
	latRate int
	rows    []tRow
}

type tRow struct {
	name      string
	policy    string // what each name's two owners declare
	qpsRounds []float64
	qps       float64
	lat       latencyStats
	lost      int64
}

// steeringConditions are phase T's servers: each serves the same names, two owners with two
// addresses each, under a path of its own, with a policy (the steering object of the owners'
// values) or none.
var steeringConditions = []struct{ name, path, eu, us, body string }{
	{"no policy", "/bencht0", "", "", ""},
	{"weights 90/10", "/bencht1", `{"weight":90}`, `{"weight":10}`, ""},
	{"priorities 0/1", "/bencht2", `{"priority":0}`, `{"priority":1}`, ""},
	{"no policy, locality", "/bencht3", "", "", "locality-cluster eu1 10.255.0.0/16"},
}

// phaseT: the names of every condition in etcd; one server per condition; dnsperf asks each for
// every name's addresses, round after round, rotating the order, and then at the same fixed rate
// for the latency. Every name of a condition with a policy is answered from a choice per
// question, from the packed reply of that choice (see the plugin README, "Steering").
func (h *harness) phaseT() error {
	ctx, cancel := h.ctx()
	defer cancel()
	n := h.opt.tnames
	var recs []kv
	for _, c := range steeringConditions {
		if err := clearPrefix(ctx, h.cli, c.path+"/"); err != nil {
			return err
		}
		recs = append(recs, benchdata.Steered(strings.TrimPrefix(c.path, "/"), n, c.eu, c.us)...)
	}
	if err := loadRecords(ctx, h.cli, recs, 8); err != nil {
		return err
	}
	input := filepath.Join(h.runDir, "queries-steering.txt")
	if err := os.WriteFile(input, []byte(steeringQueries(n)), 0o644); err != nil {
		return err
	}
	t := &tResults{names: n}
	h.res.t = t
	servers := make([]*coreDNS, len(steeringConditions))
	for i, c := range steeringConditions {
		body := fmt.Sprintf("gatewaydns {\n    endpoint %s\n    path %s\n    %s\n}", h.etcd.ClientURL, c.path, c.body)
		srv, _, err := h.start(serverSpec{name: fmt.Sprintf("steering-%d", i), body: body, cpu: h.serverCPU, pprof: h.opt.profile}, 60*time.Second)
		if err != nil {
			return err
		}
		defer srv.stop()
		if err := checkSteered(srv, i > 0 && c.eu != ""); err != nil {
			return srv.failure(err)
		}
		servers[i] = srv
		t.rows = append(t.rows, tRow{name: c.name, policy: strings.TrimSpace(c.eu + " " + c.us + " " + c.body)})
	}
	return h.measureSteering(t, servers, input)
}

// measureSteering runs the rounds of phase T.
func (h *harness) measureSteering(t *tResults, servers []*coreDNS, input string) error {
	perfLog := filepath.Join(h.runDir, "dnsperf-T.log")
	warm := h.perf()
	warm.Duration = min(2*time.Second, h.opt.duration)
	for _, s := range servers {
		if _, err := runDnsperf(warm, s.DNS, input, perfLog); err != nil {
			return s.failure(err)
		}
	}
	for r := range h.opt.rounds {
		for i := range servers {
			k := (i + r) % len(servers)
			res, err := h.measure(servers[k], input, perfLog, r == 0, "steering")
			if err != nil {
				return err
			}
			t.rows[k].qpsRounds = append(t.rows[k].qpsRounds, res.QPS)
			t.rows[k].lost += res.Lost
			logf("T: %-22s round %d: %8.0f qps, lost %d", t.rows[k].name, r+1, res.QPS, res.Lost)
		}
	}
	slowest := 0.0
	for i := range t.rows {
		t.rows[i].qps = median(t.rows[i].qpsRounds)
		if slowest == 0 || t.rows[i].qps < slowest {
			slowest = t.rows[i].qps
		}
	}
	t.latRate = max(int(slowest*h.opt.latFraction), 100)
	lp := h.perf()
	lp.MaxQPS, lp.Verbose, lp.Duration = t.latRate, true, max(h.opt.duration/2, time.Second)
	for i, s := range servers {
		res, err := runDnsperf(lp, s.DNS, input, perfLog)
		if err != nil {
			return s.failure(err)
		}
		t.rows[i].lat = summarize(durations(res.Latencies))
		logf("T: %-22s %8.0f qps (median), %.2fx no policy; at %d qps p99 %.3f ms", t.rows[i].name, t.rows[i].qps, t.rows[i].qps/t.rows[0].qps, t.latRate, t.rows[i].lat.p99*1000)
	}
	return nil
}

// steeringQueries asks every name's A records, in a shuffled order, 20,000 questions at least.
func steeringQueries(n int) string {
	var b strings.Builder
	for _, i := range rand.New(rand.NewPCG(36, 36)).Perm(max(n, 20000)) {
		fmt.Fprintf(&b, "n%d.t.%s A\n", i%n, zone)
	}
	return b.String()
}

// checkSteered asks the first name, which answers one owner's two addresses where weights
// decide (weighted), and two or four of them otherwise.
func checkSteered(srv *coreDNS, weighted bool) error {
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	r, err := ask(c, srv.DNS, "n0.t."+zone, dns.TypeA)
	if err != nil {
		return err
	}
	if weighted && len(r.Answer) != 2 || !weighted && len(r.Answer) != 2 && len(r.Answer) != 4 {
		return fmt.Errorf("n0.t.%s: %d answers:\n%v", zone, len(r.Answer), r)
	}
	return nil
}

// renderSteering is the report's section on phase T.
func renderSteering(p func(string, ...any), t *tResults) {
	p("## T: answers with a steering policy on every name")
	p("")
	p("%d names, each published by two owners (eu1, us1) with two addresses each; one gatewaydns server per", t.names)
	p("condition, the same names under its own path; dnsperf asks every name's A records in a shuffled order.")
	p("A name with a policy is answered from a choice per question, from the packed reply of that choice")
	p("(one per owner drawn by weight, one for the tier, ...), by the batched UDP path as other names are;")
	p("with `locality-cluster` set, so is every name of two owners (the client's own cluster first).")
	p("")
	p("| condition | policy | QPS (median) | x no policy | p99 at %d qps | lost |", t.latRate)
	p("|---|---|---:|---:|---:|---:|")
	for _, r := range t.rows {
		p("| %s | `%s` | %.0f | %.2f | %s | %d |", r.name, r.policy, r.qps, ratio(r.qps, t.rows[0].qps), ms(r.lat.p99), r.lost)
	}
	p("")
}

// steeringTargets is issue 36's goal: QPS with a policy on every name at least 0.9x without,
// for each condition against the one without any.
func steeringTargets(t *tResults) []target {
	var out []target
	for _, c := range steeringConditions[1:] {
		tg := target{what: "QPS, " + c.name + " on every name", goal: ">= 0.9 x no policy", status: status(false, false)}
		if t != nil && len(t.rows) == len(steeringConditions) && t.rows[0].qps > 0 {
			for _, r := range t.rows[1:] {
				if r.name == c.name {
					x := r.qps / t.rows[0].qps
					tg.measured, tg.status = fmt.Sprintf("%.2f x (%.0f vs %.0f qps)", x, r.qps, t.rows[0].qps), status(true, x >= 0.9)
				}
			}
		}
		out = append(out, tg)
	}
	return out
}
