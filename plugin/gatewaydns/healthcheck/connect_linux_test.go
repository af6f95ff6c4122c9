//go:build linux

package healthcheck

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestConnectTCPTellsOpenRefusedAndSilentAddresses: a tcp check's own connect passes against a
// listener, fails at once with the refusal of a closed port, and fails by its deadline, not
// later, against an address that never answers.
func TestConnectTCPTellsOpenRefusedAndSilentAddresses(t *testing.T) {
	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	go func() {
		for {
			c, err := open.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	for _, tc := range []struct {
		behaviour string
		addr      string
		want      func(error) bool
		within    time.Duration
	}{
		{"a listener: connected", open.Addr().String(), func(err error) bool { return err == nil }, time.Second},
		{"a closed port: refused at once", closedAddr, func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }, 200 * time.Millisecond},
		{"a listener that never accepts, its queue full: timed out at the deadline", silentListener(t), func(err error) bool { return errors.Is(err, errTimeout) }, 700 * time.Millisecond},
	} {
		start := time.Now()
		ok, err := connectTCP(netip.MustParseAddrPort(tc.addr), start.Add(300*time.Millisecond))
		if took := time.Since(start); !ok || !tc.want(err) || took > tc.within {
			t.Errorf("%s: ok %t, err %v after %s", tc.behaviour, ok, err, took)
		}
	}
	// A thousand checks in a row: none waits for a wake-up that came before it waited.
	for i := range 1000 {
		if _, err := connectTCP(netip.MustParseAddrPort(open.Addr().String()), time.Now().Add(time.Second)); err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
	}
}

// silentListener is the address of a listener whose accept queue is full: the kernel drops the
// SYN of another connection, and a connect hears nothing, as from a black-holed address.
func silentListener(t *testing.T) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa.(*unix.SockaddrInet4).Port)).String()
	for range 2 { // a queue of 0 holds one connection; then the SYNs are dropped
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			break
		}
		t.Cleanup(func() { c.Close() })
	}
	return addr
}
