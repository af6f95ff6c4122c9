// Package tcpproxy is a loopback TCP proxy that tests put between a client and a server to
// cut the link (a partition) and restore it, or to slow it down, without stopping either side.
package tcpproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards every connection on Addr to a target while the link is up.
type Proxy struct {
	Addr string // host:port to dial instead of the target

	target string
	ln     net.Listener

	delay atomic.Int64 // nanoseconds each chunk is held, in each direction
	hole  atomic.Bool  // accept and read, never pass anything on: a hung host

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// Start listens on a free loopback port and forwards to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Cut drops every open connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
}

// SetDelay holds every chunk read from either side for d before it is passed on: a slow link,
// with open connections kept. Zero makes it fast again.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// BlackHole keeps accepting connections and reading from both sides but passes nothing on,
// as a host that hangs (SIGSTOP, a dead link with no RST) looks to its peers: connections stay
// open and every request waits for an answer that never comes, until Restore.
func (p *Proxy) BlackHole() { p.hole.Store(true) }

// Restore lets connections through again. After BlackHole it closes the connections that
// were open meanwhile: bytes were lost on them, so their peers must reconnect, as after a
// real hang.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
	if p.hole.Swap(false) {
		for c := range p.conns {
			c.Close()
		}
	}
}

// Close stops the proxy and waits for its goroutines.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.forward(c)
	}
}

func (p *Proxy) forward(client net.Conn) {
	defer p.wg.Done()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(client, server) {
		return
	}
	defer p.untrack(client, server)
	done := make(chan struct{}, 2)
	// A cut, or either side closing, ends the copy in one direction; then both are closed.
	pipe := func(dst, src net.Conn) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 && !p.hole.Load() {
				time.Sleep(time.Duration(p.delay.Load()))
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil { // io.EOF, or the connection was closed
				return
			}
		}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	client.Close()
	server.Close()
	<-done
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.conns, c)
	}
}
