package udpbatch

import (
	"context"
	"net"
	"os"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// handoff answers the datagrams a path hands off: a miekg/dns server, with the CoreDNS
// server's handler, TSIG secrets and acceptance rules, reading them from a queue rather than a
// socket (handoffConn) and writing its replies through the path's socket of the address they
// came to. So a handed-off question gets what the server's own UDP listener would give it: a
// goroutine, the checks of its header, TSIG, FORMERR for what does not unpack, the chain.
type handoff struct {
	conn *handoffConn
	srv  *dns.Server
	done chan struct{} // closed when the server returned
}

func newHandoff(out net.PacketConn, p *Path) *handoff {
	cfg := p.cfg
	h := &handoff{conn: newHandoffConn(out), done: make(chan struct{})}
	// The handler and the acceptance are the path's current ones (Path.Serve), read per
	// question: a reload hands the path over with the datagrams queued here.
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, m *dns.Msg) {
		if sv := p.current(); sv != nil {
			sv.Handler.ServeDNS(w, m)
		}
	})
	accept := func(hdr dns.Header) dns.MsgAcceptAction {
		if sv := p.current(); sv != nil {
			return sv.Accept(hdr)
		}
		return dns.MsgIgnore
	}
	h.srv = &dns.Server{PacketConn: h.conn, Net: "udp", Handler: handler, TsigSecret: cfg.TsigSecret, MsgAcceptFunc: accept}
	go func() {
		defer close(h.done)
		if err := h.srv.ActivateAndServe(); err != nil {
			cfg.Log.Warningf("Batched UDP path: the handoff server of %s stopped: %v", out.LocalAddr(), err)
		}
	}()
	return h
}

// take queues a copy of the datagram req from addr; false when the queue is full.
func (h *handoff) take(req []byte, addr net.Addr) bool {
	select {
	case h.conn.in <- datagram{b: append([]byte(nil), req...), addr: addr}:
		return true
	default:
		return false
	}
}

// stop shuts the server down, waiting for the questions it answers until ctx ends.
func (h *handoff) stop(ctx context.Context) error {
	err := h.srv.ShutdownContext(ctx)
	h.conn.Close()
	select {
	case <-h.done:
	case <-ctx.Done():
		if err == nil {
			err = ctx.Err()
		}
	}
	return err
}

type datagram struct {
	b    []byte
	addr net.Addr
}

// handoffConn is a net.PacketConn whose datagrams come from a queue and whose replies go out
// through a socket of the path.
type handoffConn struct {
	in     chan datagram
	out    net.PacketConn
	closed chan struct{}
	once   sync.Once

	mu       sync.Mutex
	deadline time.Time
	moved    chan struct{} // closed when the deadline moves, to wake a read waiting on the old one
}

func newHandoffConn(out net.PacketConn) *handoffConn {
	return &handoffConn{in: make(chan datagram, handoffQueue), out: out, closed: make(chan struct{}), moved: make(chan struct{})}
}

// ReadFrom takes the next queued datagram, until the read deadline or Close. A deadline set
// meanwhile counts: miekg/dns ends its read loop by setting one in the past.
func (c *handoffConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		c.mu.Lock()
		deadline, moved := c.deadline, c.moved
		c.mu.Unlock()
		var timeout <-chan time.Time
		if !deadline.IsZero() {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case d := <-c.in:
			return copy(p, d.b), d.addr, nil
		case <-c.closed:
			return 0, nil, net.ErrClosed
		case <-timeout:
			return 0, nil, os.ErrDeadlineExceeded
		case <-moved:
		}
	}
}

// WriteTo sends a reply through the path's socket of the address the question came to.
func (c *handoffConn) WriteTo(p []byte, addr net.Addr) (int, error) { return c.out.WriteTo(p, addr) }

func (c *handoffConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *handoffConn) LocalAddr() net.Addr { return c.out.LocalAddr() }

func (c *handoffConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

func (c *handoffConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	close(c.moved)
	c.moved = make(chan struct{})
	c.mu.Unlock()
	return nil
}

func (c *handoffConn) SetWriteDeadline(time.Time) error { return nil }
