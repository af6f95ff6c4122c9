// Package udpbatch answers a zone's UDP questions from packed replies on sockets of its own: a
// fixed set of reader goroutines, each on a socket of the server's address (SO_REUSEPORT),
// reading and writing many datagrams per system call (recvmmsg and sendmmsg, through
// golang.org/x/net's ReadBatch and WriteBatch). A question it cannot answer from a packed reply
// is handed, as the datagram it came in, to a miekg/dns server of the CoreDNS server's settings
// and handler, which answers it through the server's plugin chain exactly as the server's own
// UDP listener would: every plugin sees what it sees today.
//
// The reader goroutines live as long as the path: their stacks are grown once, where a server
// that starts a goroutine per datagram grows a new stack for most of them.
package udpbatch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/packed"
)

// Question is a datagram the path read, parsed for a packed reply.
type Question struct {
	Query packed.Query
	Name  []byte    // the question's name in lower case, text form; good during Answer only
	Len   int       // the request's length
	Read  time.Time // when its batch was read
	// From is the client's address, which steering places clients by; good during Answer only.
	From net.Addr
}

// Config is what a path runs.
type Config struct {
	// Addrs are the addresses (host:port) to read from, each with sockets of its own.
	Addrs []string
	// Readers is how many reader goroutines (and sockets) each address gets.
	Readers int
	// TsigSecret are the keys of the CoreDNS server's UDP listener, which its handoff server
	// checks signed questions with.
	TsigSecret map[string]string
	// Serving is what the path answers with first; Path.Serve swaps it.
	Serving Serving
	// Log reports what went wrong on the way.
	Log interface {
		Warningf(format string, v ...any)
	}
}

// Serving is what a path answers with: what a CoreDNS reload changes (the handler chain, the
// zones' records) while the path's sockets, and the datagrams queued on them, stay.
type Serving struct {
	// Answer appends the packed reply to q to dst, or says no (ok false): then the datagram
	// is handed off. It is called by several readers at once.
	Answer func(q *Question, dst []byte) (reply []byte, ok bool)
	// Handler answers what is handed off, as the CoreDNS server's UDP listener does; Accept is
	// that listener's acceptance of a request's header (nil: miekg/dns's default).
	Handler dns.Handler
	Accept  dns.MsgAcceptFunc
	// Count, when set, is told after each batch how many datagrams were answered, handed off,
	// and dropped because the handoff server fell behind.
	Count func(answered, handedOff, dropped int)
}

// batchLen is how many datagrams one system call reads or writes at most.
const batchLen = 64

// readLen is the most of a datagram read; miekg/dns reads 512 bytes (its UDPSize) unless told
// otherwise, and what the path hands off is read again as that.
const readLen = 4096

// handoffQueue is how many datagrams may wait for the handoff server; more are dropped, as a
// socket's full receive buffer drops them.
const handoffQueue = 4096

// Path is a running batched UDP path.
type Path struct {
	cfg      Config
	serving  atomic.Pointer[Serving] // nil: paused
	mu       sync.Mutex
	resumed  chan struct{} // closed by the next Serve
	stopped  chan struct{} // closed by Stop
	conns    []net.PacketConn
	handoffs []*handoff
	readers  sync.WaitGroup
	stopOnce sync.Once
}

// Start binds Readers sockets to each of Addrs (with SO_REUSEPORT, beside the server's own)
// and starts reading them. An address that cannot be bound is reported and left to the
// server's own listener; none at all is an error.
func Start(cfg Config) (*Path, error) {
	if cfg.Readers < 1 {
		cfg.Readers = 1
	}
	p := &Path{cfg: cfg, resumed: make(chan struct{}), stopped: make(chan struct{})}
	p.Serve(cfg.Serving)
	var bound []string
	for _, addr := range cfg.Addrs {
		var conns []net.PacketConn
		var err error
		for range cfg.Readers {
			var c net.PacketConn
			if c, err = listen(addr); err != nil {
				break
			}
			conns = append(conns, c)
		}
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			cfg.Log.Warningf("Batched UDP path: %v; the server's own listener answers %s", err, addr)
			continue
		}
		h := newHandoff(conns[0], p)
		p.handoffs = append(p.handoffs, h)
		for _, c := range conns {
			p.conns = append(p.conns, c)
			p.readers.Go(func() { p.read(c, h) })
		}
		bound = append(bound, addr)
	}
	if len(bound) == 0 {
		return nil, fmt.Errorf("no address of %v could be bound", cfg.Addrs)
	}
	return p, nil
}

// Serve makes the path answer with s from its next batch on.
func (p *Path) Serve(s Serving) {
	if s.Accept == nil {
		s.Accept = dns.DefaultMsgAcceptFunc
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serving.Store(&s)
	close(p.resumed)
	p.resumed = make(chan struct{})
}

// Pause makes the path hold what it read until the next Serve: between a reload's old
// instance stopping and its new one serving, the datagrams wait in the sockets' buffers, as
// they wait in the buffer of CoreDNS's own listener, rather than be answered by an instance
// that is gone.
func (p *Path) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serving.Store(nil)
}

// current is what the path answers with, waiting while it is paused; nil once it stopped.
func (p *Path) current() *Serving {
	for {
		if sv := p.serving.Load(); sv != nil {
			return sv // the usual case: no lock per batch
		}
		p.mu.Lock()
		sv, resumed := p.serving.Load(), p.resumed
		p.mu.Unlock()
		if sv != nil {
			return sv
		}
		select {
		case <-resumed:
		case <-p.stopped:
			return nil
		}
	}
}

// Stop closes the sockets, waits for the readers and for the handoff servers' questions
// (each wait bounded by wait), and reports what did not end in time.
func (p *Path) Stop(wait time.Duration) error {
	var err error
	p.stopOnce.Do(func() {
		close(p.stopped)
		for _, c := range p.conns {
			c.Close()
		}
		done := make(chan struct{})
		go func() { p.readers.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(wait):
			err = errors.New("batched UDP path: readers did not stop in time")
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		for _, h := range p.handoffs {
			if e := h.stop(ctx); e != nil && err == nil {
				err = fmt.Errorf("batched UDP path: handoff server: %w", e)
			}
		}
	})
	return err
}

// answer is the packed reply to the datagram req (from a socket of family, sent from the client
// address from), appended to dst; q and name are the reader's, reused from one datagram to the
// next.
func (s *Serving) answer(req []byte, q *Question, name *[]byte, family int, from net.Addr, dst []byte) ([]byte, bool) {
	var ok bool
	if *name, ok = packed.ParseQuery(req, &q.Query, *name); !ok {
		return nil, false
	}
	q.Name, q.Len, q.Query.Family, q.From = *name, len(req), family, from
	reply, ok := s.Answer(q, dst)
	q.From = nil // no reference to a client's address past its answer
	return reply, ok
}

// listen binds a UDP socket with SO_REUSEPORT to addr.
func listen(addr string) (net.PacketConn, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) // #nosec G115 -- a descriptor
		}); err != nil {
			return err
		}
		return serr
	}}
	c, err := lc.ListenPacket(context.Background(), "udp", addr)
	if err != nil {
		return nil, fmt.Errorf("binding %s: %w", addr, err)
	}
	return c, nil
}

// batchConn is what ipv4.PacketConn and ipv6.PacketConn have in common.
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// read answers the datagrams of c until it is closed.
func (p *Path) read(c net.PacketConn, h *handoff) {
	var bc batchConn = ipv4.NewPacketConn(c)
	family := 1
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() == nil {
		bc, family = ipv6.NewPacketConn(c), 2
	}
	in := make([]ipv4.Message, batchLen)
	out := make([]ipv4.Message, batchLen)
	replies := make([][]byte, batchLen)
	for i := range in {
		in[i].Buffers = [][]byte{make([]byte, readLen)}
		out[i].Buffers = make([][]byte, 1)
		replies[i] = make([]byte, 0, packed.MaxLen+512)
	}
	var q Question
	name := make([]byte, 0, 256)
	for {
		n, err := bc.ReadBatch(in, 0)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // an ICMP error of an earlier send, and the like: the socket goes on
		}
		sv := p.current()
		if sv == nil {
			return
		}
		q.Read = time.Now()
		k, dropped := 0, 0 // replies in out; datagrams the handoff had no room for
		for i := range in[:n] {
			m := &in[i]
			req := m.Buffers[0][:m.N]
			reply, ok := sv.answer(req, &q, &name, family, m.Addr, replies[i][:0])
			switch {
			case ok:
				replies[i] = reply[:0]
				out[k].Buffers[0], out[k].Addr = reply, m.Addr
				k++
			case !h.take(req, m.Addr):
				dropped++
			}
		}
		if sv.Count != nil {
			sv.Count(k, n-k-dropped, dropped)
		}
		if !writeAll(bc, out[:k]) {
			return
		}
	}
}

// writeAll sends the replies out, and reports false once the socket is closed.
func writeAll(bc batchConn, out []ipv4.Message) bool {
	defer func() {
		for i := range out {
			out[i].Addr = nil // no reference to a client's address past its reply
		}
	}()
	for sent := 0; sent < len(out); {
		w, err := bc.WriteBatch(out[sent:], 0)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return false
			}
			w = max(w, 1) // the one that failed is lost, as a failed write is
		}
		sent += w
	}
	return true
}
