package tests

import (
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// What the steering tests run against: health endpoints a test opens and closes, and clients
// that ask from a network of their own.

// tcpEndpoint is a TCP listener a test opens and closes, as a Gateway's port that goes away:
// connections to it are accepted and closed, or refused while it is closed.
type tcpEndpoint struct {
	addr string
	mu   sync.Mutex
	ln   net.Listener
	done chan struct{}
}

func newTCPEndpoint(t *testing.T, addr string) *tcpEndpoint {
	e := &tcpEndpoint{addr: addr}
	e.open(t)
	t.Cleanup(e.close)
	return e
}

func (e *tcpEndpoint) open(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", e.addr)
	if err != nil {
		t.Fatalf("listen %s: %v", e.addr, err)
	}
	e.mu.Lock()
	e.ln, e.done = ln, make(chan struct{})
	done := e.done
	e.mu.Unlock()
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

func (e *tcpEndpoint) close() {
	e.mu.Lock()
	ln, done := e.ln, e.done
	e.ln = nil
	e.mu.Unlock()
	if ln != nil {
		ln.Close()
		<-done
	}
}

// httpEndpoint is a health endpoint that answers its status, 200 until set otherwise.
type httpEndpoint struct {
	status atomic.Int32
	srv    *http.Server
}

func newHTTPEndpoint(t *testing.T, addr string) *httpEndpoint {
	e := &httpEndpoint{}
	e.status.Store(http.StatusOK)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	e.srv = &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(e.status.Load()))
	})}
	go func() {
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("health endpoint %s: %v", addr, err)
		}
	}()
	t.Cleanup(func() { e.srv.Close() })
	return e
}

// exchangeFrom asks addr over netw from the local address local ("" for any).
func exchangeFrom(netw, local, addr string, m *dns.Msg) (*dns.Msg, error) {
	c := &dns.Client{Net: netw, Timeout: 3 * time.Second}
	if local != "" {
		d := &net.Dialer{Timeout: 3 * time.Second}
		if netw == "tcp" {
			d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
		} else {
			d.LocalAddr = &net.UDPAddr{IP: net.ParseIP(local)}
		}
		c.Dialer = d
	}
	r, _, err := c.Exchange(m, addr)
	return r, err
}

// addressesFrom is the sorted addresses of the A answer to name, asked over netw from local.
func addressesFrom(t *testing.T, netw, local, addr, name string) string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	r, err := exchangeFrom(netw, local, addr, m)
	if err != nil {
		t.Fatalf("%s from %s over %s: %v", name, local, netw, err)
	}
	return strings.Join(addresses(r), ",")
}

// among accepts an answer of at least one address, every one of them among allowed: no
// empty answer while a failover happens.
func among(allowed ...string) func(seen map[string]bool) bool {
	return func(seen map[string]bool) bool {
		for a := range seen {
			if !slices.Contains(allowed, a) {
				return false
			}
		}
		return len(seen) > 0
	}
}

// untilAnswered asks addr for name over UDP until its addresses are want (sorted, joined by
// commas), and returns how long after since that was; it fails the test after patience.
func untilAnswered(t *testing.T, addr, name, want string, since time.Time, patience time.Duration) time.Duration {
	t.Helper()
	for {
		got := ""
		if r, err := exchange("udp", addr, name, dns.TypeA); err == nil && r.Rcode == dns.RcodeSuccess {
			got = strings.Join(addresses(r), ",")
		}
		if got == want {
			return time.Since(since)
		}
		if time.Since(since) > patience {
			t.Fatalf("%s at %s: %q after %s, want %q", name, addr, got, patience, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
