package healthcheck

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// prober runs one check. Every check opens a connection of its own, as a new client would: a
// connection kept from the last check may still be served by an endpoint that no longer
// accepts new ones (a server draining, a listener closed). An http(s) check asks the server to
// close it (Connection: close), a tcp check resets it, so the checker's side keeps no socket
// in TIME_WAIT at 20,000 checks a second. An https check costs a TLS handshake each time: for
// thousands of targets, a tcp or http check, or a longer interval, is the cheaper choice.
// prober holds one HTTP transport per TLS server name (most targets share the empty one).
type prober struct {
	timeout time.Duration
	dialer  net.Dialer

	mu         sync.Mutex
	transports map[string]*http.Transport
}

func newProber(timeout time.Duration) *prober {
	// No TCP keep-alive: a check's connection lives for one check, and its four setsockopt
	// calls were a tenth of a tcp check's cost. No Timeout either: the check's context has
	// the deadline, and a second one would cost a second timer per check.
	return &prober{timeout: timeout, dialer: net.Dialer{KeepAlive: -1}, transports: map[string]*http.Transport{}}
}

// maxBody is how much of a response body is read: a health endpoint's answer is its status.
const maxBody = 4 << 10

// check runs the check of t, bounded by ctx (which carries the timeout).
func (p *prober) check(ctx context.Context, t Target) error {
	if t.Check.Scheme == record.CheckTCP && t.Check.Host == "" {
		if ip, err := netip.ParseAddr(t.Addr); err == nil {
			deadline, ok := ctx.Deadline() // the checker's has one: the check's timeout
			if !ok {
				deadline = time.Now().Add(p.timeout) // never a wait without a bound
			}
			if ok, err := connectTCP(netip.AddrPortFrom(ip, t.Check.Port), deadline); ok {
				return err
			}
		}
	}
	addr := t.Check.Target(t.Addr)
	if t.Check.Scheme == record.CheckTCP {
		conn, err := p.dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			// Reset instead of closing: twenty thousand closes a second would leave the
			// checker's side with a million sockets in TIME_WAIT.
			_ = tc.SetLinger(0)
		}
		return conn.Close()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.Check.Scheme+"://"+addr+t.Check.Path, nil)
	if err != nil {
		return err
	}
	if t.Check.Host != "" {
		req.Host = t.Check.Host
	}
	req.Header.Set("User-Agent", "gatewaydns-healthcheck")
	resp, err := p.transport(t.Check.Host).RoundTrip(req)
	if err != nil {
		return err
	}
	_, _ = io.CopyN(io.Discard, resp.Body, maxBody)
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 399 {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// transport is the transport for checks that send host as their TLS server name. It follows
// no redirect (RoundTrip does not) and uses no proxy from the environment: the check is of the
// address, and a 3xx passes, as Route 53 takes it. Certificates are not verified: a check of
// an address by IP has no name to verify against, and an expired certificate is no reason to
// take a cluster out of the answers.
func (p *prober) transport(host string) *http.Transport {
	p.mu.Lock()
	defer p.mu.Unlock()
	if tr := p.transports[host]; tr != nil {
		return tr
	}
	tr := &http.Transport{
		DialContext:           p.dialer.DialContext,
		TLSClientConfig:       &tls.Config{ServerName: host, InsecureSkipVerify: true}, //nolint:gosec // see above
		TLSHandshakeTimeout:   p.timeout,
		ResponseHeaderTimeout: p.timeout,
		DisableKeepAlives:     true,
		DisableCompression:    true,
	}
	p.transports[host] = tr
	return tr
}

// close closes the idle connections of every transport (there are none after a check, but a
// transport may hold one that a check just finished with).
func (p *prober) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, tr := range p.transports {
		tr.CloseIdleConnections()
	}
}

// errTimeout is a tcp check that got no answer within its timeout.
var errTimeout = errors.New("i/o timeout: no answer within the check's timeout")
