package e2e

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// DNSPoller asks one question continuously and keeps every reply that does not hold.
type DNSPoller struct {
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	asked   int
	bad     []string // replies that failed the condition, or no reply at all
	dupReps int      // replies that answered the right address more than once
}

// PollDNS starts asking addr for name A every few milliseconds; every reply must be NOERROR
// with exactly the addresses want (a repeated address is tolerated and counted).
func PollDNS(addr, name string, want ...string) *DNSPoller {
	return PollDNSFor(addr, name, func(seen map[string]bool) bool {
		ok := len(seen) == len(want)
		for _, w := range want {
			ok = ok && seen[w]
		}
		return ok
	})
}

// Among accepts an answer of at least one address, every one of them among allowed: no empty
// answer while a failover happens (PollDNSFor).
func Among(allowed ...string) func(seen map[string]bool) bool {
	return func(seen map[string]bool) bool {
		for a := range seen {
			if !slices.Contains(allowed, a) {
				return false
			}
		}
		return len(seen) > 0
	}
}

// PollDNSFor is PollDNS for replies whose set of addresses accept takes.
func PollDNSFor(addr, name string, accept func(seen map[string]bool) bool) *DNSPoller {
	p := &DNSPoller{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			r, err := Exchange("udp", addr, name, dns.TypeA)
			p.mu.Lock()
			p.asked++
			switch {
			case err != nil:
				p.bad = append(p.bad, fmt.Sprintf("%s: no reply: %v", time.Now().Format("15:04:05.000"), err))
			case r.Rcode != dns.RcodeSuccess:
				p.bad = append(p.bad, fmt.Sprintf("%s: %s", time.Now().Format("15:04:05.000"), dns.RcodeToString[r.Rcode]))
			default:
				got := Addresses(r)
				seen := map[string]bool{}
				for _, a := range got {
					seen[a] = true
				}
				if !accept(seen) {
					p.bad = append(p.bad, fmt.Sprintf("%s: NOERROR with %v", time.Now().Format("15:04:05.000"), got))
				} else if len(got) > len(seen) {
					p.dupReps++
				}
			}
			p.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return p
}

// Finish stops the poller and fails the test for any reply that did not hold. A poller that
// asked fewer than 20 questions asks on, for at most 5 s, until it has: an event over in a few
// hundred milliseconds (ten reloads) is seen by the questions asked during it, and those after
// it show the server answering still; a poller that cannot ask 20 in that time says nothing.
func (p *DNSPoller) Finish(t testing.TB, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		p.mu.Lock()
		asked := p.asked
		p.mu.Unlock()
		if asked >= 20 {
			break
		}
	}
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.asked < 20 {
		t.Errorf("%s: only %d questions asked, too few to say anything", what, p.asked)
	}
	if len(p.bad) > 0 {
		shown := p.bad
		if len(shown) > 10 {
			shown = shown[:10]
		}
		t.Errorf("%s: %d of %d replies did not answer as expected (a flap):\n%s", what, len(p.bad), p.asked, strings.Join(shown, "\n"))
	}
	if p.dupReps > 0 {
		t.Logf("%s: %d of %d replies held the address twice", what, p.dupReps, p.asked)
	}
	t.Logf("%s: %d questions, %d unanswered or wrong", what, p.asked, len(p.bad))
}

// ReadyPoller asks /ready every few milliseconds and remembers every answer that was not 200.
type ReadyPoller struct {
	stop, done  chan struct{}
	mu          sync.Mutex
	asked       int
	unreachable int
	bad         []string
}

// PollReady starts asking the ready plugin at addr every 20 ms.
func PollReady(addr string) *ReadyPoller {
	r := &ReadyPoller{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			resp, err := http.Get("http://" + addr + "/ready") // #nosec G107 -- loopback test URL
			r.mu.Lock()
			r.asked++
			switch {
			case err != nil:
				// The ready plugin closes its listener when a reload starts and opens it again
				// in the new instance (stock CoreDNS, whatever the plugins): a probe in between
				// fails to connect. Not an answer of gatewaydns's readiness; counted apart.
				r.unreachable++
			case resp.StatusCode != 200:
				// The ready plugin's body names the plugins that are not ready.
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
				r.bad = append(r.bad, fmt.Sprintf("%s: HTTP %d %q", time.Now().Format("15:04:05.000"), resp.StatusCode, body))
			}
			if err == nil {
				resp.Body.Close()
			}
			r.mu.Unlock()
		}
	}()
	return r
}

// Finish stops the poller and fails the test for any answer that was not 200.
func (r *ReadyPoller) Finish(t testing.TB) {
	t.Helper()
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bad) > 0 {
		t.Errorf("/ready was not 200 %d of %d times: %v", len(r.bad), r.asked, r.bad[:min(len(r.bad), 10)])
	}
	t.Logf("/ready: %d polls, %d not 200, %d not connected (the ready plugin's listener moving to the new instance)", r.asked, len(r.bad), r.unreachable)
}

// Settle waits until f is at most limit, up to 15s, and returns its last value.
func Settle(limit int, f func() int) int {
	deadline := time.Now().Add(15 * time.Second)
	for {
		v := f()
		if v <= limit || time.Now().After(deadline) {
			return v
		}
		time.Sleep(250 * time.Millisecond)
	}
}
