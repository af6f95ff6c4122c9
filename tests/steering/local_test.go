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
	// A forwarder asking for a client says so with EDNS Client Subnet, and the reply carries
	// the option back with the scope of the answer (RFC 7871 7.2.1), so that the forwarder's
	// cache hands it to the clients it suits: the clusters' networks are 127.0.0.21/32 and
	// 127.0.0.22/32.
	for _, tc := range []struct {
		behaviour    string
		name, subnet string
		rcode        int
		want         string
		scope        int
	}{
		{"a client of us1's network, asked from eu1's: us1, for that address", name, us1Client + "/32", dns.RcodeSuccess, us1, 32},
		{"a /24 holding both networks: placed nowhere, the union, for that /24", name, "127.0.0.0/24", dns.RcodeSuccess, eu1 + "," + us1, 24},
		{"a client far from both: the union, for the half of the address space they are not in", name, "192.0.2.0/24", dns.RcodeSuccess, eu1 + "," + us1, 1},
		{"NXDOMAIN: for any client", fqdn("nothere"), us1Client + "/32", dns.RcodeNameError, "", 0},
		{"a scope in the question: FORMERR, without the option", name, us1Client + "/32 scope", dns.RcodeFormatError, "", -1},
	} {
		for _, netw := range []string{"udp", "tcp"} {
			ecs := clientSubnet(tc.subnet)
			m := new(dns.Msg)
			m.SetQuestion(tc.name, dns.TypeA)
			m.SetEdns0(1232, false)
			m.IsEdns0().Option = append(m.IsEdns0().Option, ecs)
			r, err := e2e.ExchangeFrom(netw, eu1Client, l.central.DNS, m)
			if err != nil || r.Rcode != tc.rcode || strings.Join(e2e.Addresses(r), ",") != tc.want {
				t.Fatalf("%s, over %s: %v (%v), want %s %s", tc.behaviour, netw, r, err, dns.RcodeToString[tc.rcode], tc.want)
			}
			var echoed []*dns.EDNS0_SUBNET
			if opt := r.IsEdns0(); opt != nil {
				for _, o := range opt.Option {
					if e, ok := o.(*dns.EDNS0_SUBNET); ok {
						echoed = append(echoed, e)
					}
				}
			}
			if tc.scope < 0 {
				if len(echoed) != 0 {
					t.Fatalf("%s, over %s: the reply carries %v", tc.behaviour, netw, echoed)
				}
				continue
			}
			if len(echoed) != 1 || echoed[0].Family != 1 || echoed[0].SourceNetmask != ecs.SourceNetmask ||
				!echoed[0].Address.Equal(ecs.Address) || int(echoed[0].SourceScope) != tc.scope {
				t.Fatalf("%s, over %s: the reply carries %v, want %s/%d back with scope %d", tc.behaviour, netw, echoed, ecs.Address, ecs.SourceNetmask, tc.scope)
			}
		}
	}
	// Secondaries place no one: Knot holds both.
	e2e.WaitFor(t, 5*time.Second, l.knot.DNS, name, dns.TypeA, e2e.AnswersWith(eu1, us1))
}

// clientSubnet is the EDNS Client Subnet option of an IPv4 network ("10.1.0.0/16"), with a
// scope of its length when followed by " scope" (which a question must not have).
func clientSubnet(network string) *dns.EDNS0_SUBNET {
	network, withScope := strings.CutSuffix(network, " scope")
	ip, n, err := net.ParseCIDR(network)
	if err != nil {
		panic(err)
	}
	bits, _ := n.Mask.Size()
	e := &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: uint8(bits), Address: ip.To4()}
	if withScope {
		e.SourceScope = e.SourceNetmask
	}
	return e
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
