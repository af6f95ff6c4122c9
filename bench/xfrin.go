package main

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// xfrWire is what a transfer cost on the wire, as the client saw it.
type xfrWire struct {
	took     time.Duration
	messages int
	bytes    int64 // read from the TCP connection, length prefixes included
}

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	n atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// xfrIn sends the AXFR or IXFR question m to server over TCP and reads the reply as a secondary
// does (miekg/dns dns.Transfer), handing each record to each, in order. The time runs from the
// dial to the last message. An error is the first the transfer met; the rest is drained.
func xfrIn(server string, m *dns.Msg, each func(dns.RR)) (xfrWire, error) {
	var w xfrWire
	start := time.Now()
	nc, err := net.DialTimeout("tcp", server, 5*time.Second)
	if err != nil {
		return w, err
	}
	cc := &countingConn{Conn: nc}
	t := &dns.Transfer{Conn: &dns.Conn{Conn: cc}, ReadTimeout: 30 * time.Second}
	ch, err := t.In(m, server)
	if err != nil {
		nc.Close()
		return w, err
	}
	var ferr error
	for env := range ch {
		if env.Error != nil {
			if ferr == nil {
				ferr = env.Error
			}
			continue // drain
		}
		w.messages++
		for _, rr := range env.RR {
			each(rr)
		}
	}
	w.took, w.bytes = time.Since(start), cc.n.Load()
	return w, ferr
}
