package tests

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func (l *steeringLandscape) localFirst(t *testing.T) {
	name, eu1, us1 := fqdn("local"), steeringAddr["eu1"], steeringAddr["us1"]
	for _, tc := range []struct{ netw, from, want string }{
		{"udp", eu1Client, eu1}, {"tcp", eu1Client, eu1},
		{"udp", us1Client, us1}, {"tcp", us1Client, us1},
		{"udp", "127.0.0.1", eu1 + "," + us1}, // placed nowhere: the union, as without locality
	} {
		for range 5 { // the same every time: no draw in it
			if got := addressesFrom(t, tc.netw, tc.from, l.central.DNS, name); got != tc.want {
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
	r, err := exchangeFrom("udp", eu1Client, l.central.DNS, m)
	if err != nil || strings.Join(addresses(r), ",") != us1 {
		t.Fatalf("asked with ECS %s from eu1's network: %v (%v), want us1's %s", us1Client, r, err, us1)
	}
	// Secondaries place no one: Knot holds both.
	waitFor(t, 5*time.Second, l.knot.DNS, name, dns.TypeA, answersWith(eu1, us1))
}

func (l *steeringLandscape) failOpen(t *testing.T) {
	name, eu1, us1 := fqdn("allfail"), steeringAddr["eu1"], steeringAddr["us1"]
	const failing = `coredns_gatewaydns_steering_fail_open_names{zones="openmcp.cluster."}`
	if v, _ := l.central.metric(failing); v != 0 {
		t.Fatalf("%s = %v before any check failed", failing, v)
	}
	closed := time.Now()
	l.tcp["allfail eu1"].close()
	untilAnswered(t, l.central.DNS, name, us1, closed, 5*time.Second)
	closed = time.Now()
	l.tcp["allfail us1"].close()
	l.central.waitMetric(t, 5*time.Second, failing, isOne)
	took := untilAnswered(t, l.central.DNS, name, eu1+","+us1, closed, 5*time.Second)
	t.Logf("every owner failing: the union after %s", took.Round(time.Millisecond))
	waitFor(t, 5*time.Second, l.knot.DNS, name, dns.TypeA, answersWith(eu1, us1))
	if explained := explainLines(t, l.central.DNS, name); !strings.Contains(explained, "steering=fail-open") {
		t.Errorf("explain does not say the name fails open:\n%s", explained)
	}
	for _, c := range []string{"eu1", "us1"} {
		l.tcp["allfail "+c].open(t)
	}
	l.central.waitMetric(t, 5*time.Second, failing, isZero)
	if v, _ := l.central.metric(`coredns_gatewaydns_steering_fail_open_total{zones="openmcp.cluster."}`); v != 1 {
		t.Errorf("fail-open events: %v, want 1", v)
	}
}

func (l *steeringLandscape) clusterDies(t *testing.T) {
	name, eu1, us1 := fqdn("checked"), steeringAddr["eu1"], steeringAddr["us1"]
	waitFor(t, 5*time.Second, l.central.DNS, name, dns.TypeA, answersWith(eu1))
	poll := pollDNSFor(l.central.DNS, name, among(eu1, us1))
	l.writers["eu1"].kill9(t)
	l.kube["eu1"].Stop()
	died := time.Now()
	l.tcp["checked eu1"].close()
	l.followedWithin2s(t, "eu1 gone whole, nobody left to say it is down", name, us1, died)
	poll.finish(t, "answers meanwhile")
}

// explainLines is `dig CH TXT name` at addr, one line per TXT record.
func explainLines(t *testing.T, addr, name string) string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	r, err := exchangeFrom("tcp", "", addr, m)
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
