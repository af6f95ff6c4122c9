package e2e

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Health endpoints a test opens and closes (steering's health checks: issue 36), and a client
// that asks from an address of its own (a network that locality places).

// TCPEndpoint is a TCP listener a test opens and closes, as a Gateway's port that goes away:
// connections to it are accepted and closed, or refused while it is closed.
type TCPEndpoint struct {
	addr string
	mu   sync.Mutex
	ln   net.Listener
	done chan struct{}
}

// NewTCPEndpoint opens a TCPEndpoint on addr until the test ends.
func NewTCPEndpoint(t testing.TB, addr string) *TCPEndpoint {
	e := &TCPEndpoint{addr: addr}
	e.Open(t)
	t.Cleanup(e.Close)
	return e
}

// Open listens again.
func (e *TCPEndpoint) Open(t testing.TB) {
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

// Close stops listening: connections are refused.
func (e *TCPEndpoint) Close() {
	e.mu.Lock()
	ln, done := e.ln, e.done
	e.ln = nil
	e.mu.Unlock()
	if ln != nil {
		ln.Close()
		<-done
	}
}

// HTTPEndpoint is a health endpoint that answers Status, 200 until set otherwise.
type HTTPEndpoint struct {
	Status atomic.Int32
	srv    *http.Server
}

// NewHTTPEndpoint serves an HTTPEndpoint on addr until the test ends.
func NewHTTPEndpoint(t testing.TB, addr string) *HTTPEndpoint {
	e := &HTTPEndpoint{}
	e.Status.Store(http.StatusOK)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	e.srv = &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(e.Status.Load()))
	})}
	go func() {
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("health endpoint %s: %v", addr, err)
		}
	}()
	t.Cleanup(func() { e.srv.Close() })
	return e
}

// ExchangeFrom asks addr over netw from the local address local ("" for any).
func ExchangeFrom(netw, local, addr string, m *dns.Msg) (*dns.Msg, error) {
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

// AddressesFrom is the sorted addresses of the A answer to name, asked over netw from local,
// joined by commas.
func AddressesFrom(t testing.TB, netw, local, addr, name string) string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	r, err := ExchangeFrom(netw, local, addr, m)
	if err != nil {
		t.Fatalf("%s from %s over %s: %v", name, local, netw, err)
	}
	return strings.Join(Addresses(r), ",")
}
