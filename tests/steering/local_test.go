package steering

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/e2e"
)

func (l *steeringLandscape) localFirst(t *testing.T) {
	name, eu1, us1 := fqdn("local"), steeringAddr["eu1"], steeringAddr["us1"]
	for _, tc := range []struct{ netw, from, want string }{
		{"udp", eu1Client, eu1}, {"tcp", eu1Client, eu1},
		{"udp", us1Client, us1}, {"tcp", us1Client, us1},
		{"udp", "127.0.0.1", eu1 + "," + us1}, // placed nowhere: the union, as without locality
	} {
		for range 5 { // the same every time: no draw in it
			if got := e2e.AddressesFrom(t, tc.netw, tc.from, l.central.DNS, name); got != tc.want {
				t.Fatalf("from %s over %s: %s, want %s", tc.from, tc.netw, got, tc.want)
			}
		}
	}
	// A forwarder asking for a client of us1's network says so with EDNS Client Subnet.
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	m.SetEdns0(1232, false)
	opt := m.IsEdns0()
	opt.Option = append(opt.Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 32, Address: net.ParseIP(us1Client).To4()})
	r, err := e2e.ExchangeFrom("udp", eu1Client, l.central.DNS, m)
	if err != nil || strings.Join(e2e.Addresses(r), ",") != us1 {
		t.Fatalf("asked with ECS %s from eu1's network: %v (%v), want us1's %s", us1Client, r, err, us1)
	}
	// Secondaries place no one: Knot holds both.
	e2e.WaitFor(t, 5*time.Second, l.knot.DNS, name, dns.TypeA, e2e.AnswersWith(eu1, us1))
}

func (l *steeringLandscape) failOpen(t *testing.T) {
	name, eu1, us1 := fqdn("allfail"), steeringAddr["eu1"], steeringAddr["us1"]
	const failing = `coredns_gatewaydns_steering_fail_open_names{zones="openmcp.cluster."}`
	if v, _ := l.central.Metric(failing); v != 0 {
		t.Fatalf("%s = %v before any check failed", failing, v)
	}
	closed := time.Now()
	l.tcp["allfail eu1"].Close()
	untilAnswered(t, l.central.DNS, name, us1, closed, 5*time.Second)
	closed = time.Now()
	l.tcp["allfail us1"].Close()
	l.central.WaitMetric(t, 5*time.Second, failing, e2e.IsOne)
	took := untilAnswered(t, l.central.DNS, name, eu1+","+us1, closed, 5*time.Second)
	t.Logf("every owner failing: the union after %s", took.Round(time.Millisecond))
	e2e.WaitFor(t, 5*time.Second, l.knot.DNS, name, dns.TypeA, e2e.AnswersWith(eu1, us1))
	if explained := explainLines(t, l.central.DNS, name); !strings.Contains(explained, "steering=fail-open") {
		t.Errorf("explain does not say the name fails open:\n%s", explained)
	}
	for _, c := range []string{"eu1", "us1"} {
		l.tcp["allfail "+c].Open(t)
	}
	l.central.WaitMetric(t, 5*time.Second, failing, e2e.IsZero)
	if v, _ := l.central.Metric(`coredns_gatewaydns_steering_fail_open_total{zones="openmcp.cluster."}`); v != 1 {
		t.Errorf("fail-open events: %v, want 1", v)
	}
}

func (l *steeringLandscape) clusterDies(t *testing.T) {
	name, eu1, us1 := fqdn("checked"), steeringAddr["eu1"], steeringAddr["us1"]
	e2e.WaitFor(t, 5*time.Second, l.central.DNS, name, dns.TypeA, e2e.AnswersWith(eu1))
	poll := e2e.PollDNSFor(l.central.DNS, name, e2e.Among(eu1, us1))
	l.writers["eu1"].Kill()
	l.kube["eu1"].Stop()
	died := time.Now()
	l.tcp["checked eu1"].Close()
	l.followedWithin2s(t, "eu1 gone whole, nobody left to say it is down", name, us1, died)
	poll.Finish(t, "answers meanwhile")
}

// untilAnswered asks addr for name over UDP until its addresses are want (sorted, joined by
// commas), and returns how long after since that was; it fails the test after patience.
func untilAnswered(t *testing.T, addr, name, want string, since time.Time, patience time.Duration) time.Duration {
	t.Helper()
	took, ok, last := e2e.TimeToAnswer(addr, name, since, patience, strings.Split(want, ",")...)
	if !ok {
		t.Fatalf("%s at %s: %s after %s, want %s", name, addr, last, patience, want)
	}
	return took
}

// waitSerial waits until the secondary holds the primary's serial.
func waitSerial(t *testing.T, timeout time.Duration, primary string, s *e2e.Secondary) {
	t.Helper()
	want := e2e.Ask(t, "udp", primary, "openmcp.cluster.", dns.TypeSOA).Answer[0].(*dns.SOA).Serial
	e2e.WaitFor(t, timeout, s.DNS, "openmcp.cluster.", dns.TypeSOA, func(r *dns.Msg) bool {
		return len(r.Answer) == 1 && r.Answer[0].(*dns.SOA).Serial == want
	})
}

// explainLines is `dig CH TXT name` at addr, one line per TXT record.
func explainLines(t *testing.T, addr, name string) string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	r, err := e2e.ExchangeFrom("tcp", "", addr, m)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, rr := range r.Answer {
		if txt, ok := rr.(*dns.TXT); ok {
			lines = append(lines, strings.Join(txt.Txt, " "))
		}
	}
	return strings.Join(lines, "\n")
}
