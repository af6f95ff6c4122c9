package tcpproxy

import (
	"io"
	"net"
	"testing"
	"time"
)

// echoServer answers every connection by sending back what it reads.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a byte through the proxy and waits for it back.
func roundTrip(c net.Conn) (time.Duration, error) {
	start := time.Now()
	if _, err := c.Write([]byte{'x'}); err != nil {
		return 0, err
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.ReadFull(c, make([]byte, 1))
	return time.Since(start), err
}

func TestCutDelayAndRestore(t *testing.T) {
	p, err := Start(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(c); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}

	p.SetDelay(100 * time.Millisecond)
	took, err := roundTrip(c)
	if err != nil || took < 200*time.Millisecond {
		t.Fatalf("with 100ms each way, a round trip took %s (err %v), want 200ms or more", took, err)
	}
	p.SetDelay(0)

	p.Cut()
	if _, err := roundTrip(c); err == nil {
		t.Fatal("an open connection survived the cut")
	}
	if c2, err := net.Dial("tcp", p.Addr); err == nil {
		if _, err := roundTrip(c2); err == nil {
			t.Fatal("a new connection got through a cut link")
		}
		c2.Close()
	}
	p.Restore()
	c3, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if _, err := roundTrip(c3); err != nil {
		t.Fatalf("after Restore: %v", err)
	}
}

func TestBlackHoleAcceptsButNeverAnswers(t *testing.T) {
	p, err := Start(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	open, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(open); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}

	p.BlackHole()
	_ = open.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := open.Write([]byte{'x'}); err != nil {
		t.Fatalf("writing to a black-holed connection: %v", err)
	}
	if _, err := io.ReadFull(open, make([]byte, 1)); err == nil {
		t.Fatal("an open connection got an answer through a black hole")
	}
	fresh, err := net.DialTimeout("tcp", p.Addr, time.Second)
	if err != nil {
		t.Fatalf("a black hole refused a connection, want it accepted: %v", err)
	}
	_ = fresh.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, _ = fresh.Write([]byte{'x'})
	if _, err := io.ReadFull(fresh, make([]byte, 1)); err == nil {
		t.Fatal("a new connection got an answer through a black hole")
	}

	p.Restore()
	_ = fresh.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.ReadFull(fresh, make([]byte, 1)); err == nil {
		t.Fatal("a connection that lost bytes in the black hole was kept open after Restore")
	}
	again, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(again); err != nil {
		t.Fatalf("after Restore: %v", err)
	}
}
